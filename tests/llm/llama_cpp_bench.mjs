// llama.cpp (npm node-llama-cpp) greedy decoding of a GGUF model from BOS on N CPU threads:
//   node llama_cpp_bench.mjs MODEL.gguf TOKENS [THREADS=1]
// prints "ids: ..." (BOS excluded) and, on stderr, the generation time and tokens/s, then the
// least CPU time of a run (the process's, every thread: process.cpuUsage) per generated token,
// in hexir-generate --timing's words, so that a shared machine's load cancels out of a ratio.
// Run from a folder where node-llama-cpp@3.21.1 + @node-llama-cpp/linux-x64 are installed
// (NODE_PATH is not used by ESM imports; benchmark.sh links the script there).
import {getLlama} from "node-llama-cpp";

const [modelPath, tokensArg, threadsArg] = process.argv.slice(2);
const maxTokens = Number(tokensArg);
const threads = Number(threadsArg ?? 1);
const llama = await getLlama({gpu: false, build: "never", maxThreads: threads});
const model = await llama.loadModel({modelPath, gpuLayers: 0});
async function run() {
  const context = await model.createContext({contextSize: 512, threads, batchSize: 512});
  const sequence = context.getSequence();
  const ids = [];
  const cpu = process.cpuUsage();
  const start = process.hrtime.bigint();
  for await (const token of sequence.evaluate([1], {temperature: 0})) {
    ids.push(token);
    if (ids.length >= maxTokens || token === 1 || token === 2) break;
  }
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  const used = process.cpuUsage(cpu);
  await context.dispose();
  return {ids, seconds, cpuSeconds: (used.user + used.system) / 1e6};
}
await run();  // warm-up
let best = null;
let cpuSeconds = Infinity;
for (let i = 0; i < 3; ++i) {
  const r = await run();
  if (!best || r.seconds < best.seconds) best = r;
  cpuSeconds = Math.min(cpuSeconds, r.cpuSeconds);
}
console.log("ids: " + best.ids.join(" "));
console.error(`llama.cpp: 1 prompt + ${best.ids.length} generated tokens in ${(best.seconds * 1e3).toFixed(3)} ms (fastest of 3): ${(best.ids.length / best.seconds).toFixed(1)} tokens/s; ` +
              `CPU time ${(cpuSeconds * 1e3).toFixed(3)} ms (least of 3), ${(cpuSeconds * 1e3 / best.ids.length).toFixed(3)} ms per token`);
