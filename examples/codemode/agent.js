// An agent's script: make sure the notes say to buy the item it was given. It runs
// once, as the body of an async function; `trigger` is the run's --input.
const item = trigger.item;
const found = await tools.call("search_notes", { text: item, limit: 5 });
console.log(`found ${found.length} note(s) about ${item}`);

let added = null;
if (found.length === 0) {
  try {
    added = await tools.call("add_note", { text: `buy ${item}`, tags: ["shopping"] });
  } catch (e) {
    // A HostError: e.data.code says why ("invalid_arguments" names the failing path).
    console.error(`could not add the note: ${e.data.code}: ${e.data.message}`);
  }
}
return { item, found: found.map((n) => n.text), added };
