// A small script for scripts/demo.sh: it runs in a confined worker, and everything it
// learns from the outside comes through host calls the parent answers.
const first = await ops.call('test', 'counter');
const second = await ops.call('test', 'counter');
const squares = [1, 2, 3, 4].map((n) => n * n);
let evalBlocked = false;
try { eval('1'); } catch (e) { evalBlocked = true; }
return { squares, counter: [first, second], evalBlocked, at: new Date(now()).toISOString() };
