// A demo flow: summarise the notes in a folder the manifest grants for reading, write
// the summary into the folder it grants for writing, count runs in kv, and emit an
// event to a JSON-lines sink. Every call below is checked against manifest.json,
// journaled in the store before it leaves, and replayed (not repeated) after a crash.
const runs = ((await kv.get("runs")) ?? 0) + 1;
await kv.set("runs", runs);

const notes = [];
for (const entry of await fs.list(trigger.notes)) {
  if (entry.type !== "file" || !entry.name.endsWith(".txt")) continue;
  const text = await fs.read(trigger.notes + "/" + entry.name);
  notes.push({ name: entry.name, words: text.split(/\s+/).filter(Boolean).length });
}

// Outside the granted roots: refused by the parent, caught here by its code.
let outside;
try {
  await fs.read("/etc/hostname");
} catch (e) {
  outside = e.data.code;
}

const summary = { run: runs, at: new Date(now()).toISOString(), notes };
await fs.write(trigger.out + "/summary.json", JSON.stringify(summary, null, 2) + "\n");
await sink.emit("summaries", { run: runs, notes: notes.length });
return { runs, notes, reading_etc_hostname: outside };
