// quickjs-emscripten contender for the issue-5 benchmark: QuickJS compiled to WebAssembly,
// in this Node.js process, a fresh runtime + context per execution.
//
//   node qe.mjs w1 N   N executions of workload 1; one line per execution: microseconds
//   node qe.mjs w2 N   the same with 100 calls of a host function inc() per execution
//   node qe.mjs once   one execution of workload 1 (module load included); prints the result
//
// When BENCH_START_AT (CLOCK_MONOTONIC, microseconds: process.hrtime is libuv's
// CLOCK_MONOTONIC on Linux) is set, the measured executions start at that time (after the
// warm-up) and the last line is "# end T" (µs after the last one): two streams at once.
import { getQuickJS } from "quickjs-emscripten";

const BODY1 = "let s = 0; for (let i = 0; i < 1000; i++) s += i; return s;";
const BODY2 = "let s = 0; for (let i = 0; i < 1000; i++) s += i; " +
  "let c = 0; for (let j = 0; j < 100; j++) c = inc(); return s;";
const W1 = `(function () { ${BODY1} })()`;
const W2 = `(function () { ${BODY2} })()`;

const QuickJS = await getQuickJS();
let counter = 0;

function runOnce(src, host) {
  const rt = QuickJS.newRuntime();
  const vm = rt.newContext();
  if (host) {
    const fn = vm.newFunction("inc", () => vm.newNumber(++counter));
    vm.setProp(vm.global, "inc", fn);
    fn.dispose();
  }
  const h = vm.unwrapResult(vm.evalCode(src));
  const r = vm.getNumber(h);
  h.dispose();
  vm.dispose();
  rt.dispose();
  return r;
}

const [mode, nArg] = process.argv.slice(2);
if (mode === "once") {
  console.log(String(runOnce(W1, false)));
} else if (mode === "w1" || mode === "w2") {
  const host = mode === "w2";
  const src = host ? W2 : W1;
  const n = Number(nArg);
  for (let i = 0; i < 20; i++) runOnce(src, host); // warm-up, not counted
  const nowUs = () => Number(process.hrtime.bigint() / 1000n);
  const startAt = process.env.BENCH_START_AT;
  if (startAt !== undefined) {
    const t = Number(startAt);
    while (nowUs() < t - 2000) await new Promise((r) => setTimeout(r, 1));
    while (nowUs() < t) { /* the last 2 ms: spin */ }
  }
  const out = [];
  for (let i = 0; i < n; i++) {
    const t0 = process.hrtime.bigint();
    const r = runOnce(src, host);
    const t1 = process.hrtime.bigint();
    if (r !== 499500) throw new Error(`wrong result ${r}`);
    out.push((Number(t1 - t0) / 1000).toFixed(3));
  }
  if (startAt !== undefined) out.push(`# end ${nowUs()}`);
  process.stdout.write(out.join("\n") + "\n");
} else {
  console.error("usage: node qe.mjs w1|w2 N | node qe.mjs once");
  process.exit(2);
}
