// llama.cpp (npm node-llama-cpp) greedy decoding of a GGUF model from BOS on one CPU thread,
// with the top-2 gap of each step:
//   node llama_cpp_greedy.mjs MODEL.gguf TOKENS
// prints one line per generated token: "ID GAP", GAP = log p(top) - log p(second) (the
// logit gap of the softmax; "inf" when the second has probability 0). Stops after TOKENS ids
// or at BOS/EOS (ids 1 and 2), as hexir-generate does. Run from a folder where
// node-llama-cpp@3.21.1 is installed (ESM imports ignore NODE_PATH).
import {getLlama} from "node-llama-cpp";

const [modelPath, tokensArg] = process.argv.slice(2);
const maxTokens = Number(tokensArg);
const llama = await getLlama({gpu: false, build: "never", maxThreads: 1});
const model = await llama.loadModel({modelPath, gpuLayers: 0});
const context = await model.createContext({contextSize: 512, threads: 1, batchSize: 512});
const sequence = context.getSequence();
let n = 0;
for await (const out of sequence.evaluateWithMetadata([1], {probabilities: true}, {temperature: 0})) {
  const top = [...out.probabilities.entries()].sort((a, b) => b[1] - a[1]);
  const gap = top.length > 1 && top[1][1] > 0 ? Math.log(top[0][1]) - Math.log(top[1][1]) : Infinity;
  console.log(`${out.token} ${gap === Infinity ? "inf" : gap.toPrecision(6)}`);
  if (++n >= maxTokens || out.token === 1 || out.token === 2) break;
}
await context.dispose();
