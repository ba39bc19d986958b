// llama.cpp (npm node-llama-cpp) tokenization of prompts with a GGUF file's own tokenizer:
//   node llama_cpp_tokenize.mjs MODEL.gguf PROMPTS.json [BOS_ID]
// PROMPTS.json is an array of strings. Prints one JSON object per prompt: {"ids": [...],
// "text": "..."}: ids = [BOS_ID if given] + llama_tokenize(prompt, add_special=false,
// parse_special=false), text = llama_detokenize(ids, remove_special=false, unparse_special=false).
// Run from a folder where node-llama-cpp is installed (ESM imports ignore NODE_PATH).
import {readFileSync} from "node:fs";
import {getLlama} from "node-llama-cpp";

const [modelPath, promptsPath, bosArg] = process.argv.slice(2);
const prompts = JSON.parse(readFileSync(promptsPath, "utf8"));
const llama = await getLlama({gpu: false, build: "never", logLevel: "error"});
const model = await llama.loadModel({modelPath, gpuLayers: 0, vocabOnly: true});
for (const prompt of prompts) {
  const ids = [...(bosArg === undefined ? [] : [Number(bosArg)]), ...model.tokenize(prompt)];
  console.log(JSON.stringify({ids, text: model.detokenize(ids)}));
}
await model.dispose();
