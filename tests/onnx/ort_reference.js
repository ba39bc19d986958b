// Reference side of tests/onnx/models_test.sh (no Python/numpy needed):
//   node ort_reference.js run MODEL.onnx OUT_DIR IN0.npy [IN1.npy ...]
//       runs the model with onnxruntime-node, writes OUT_DIR/out<i>.npy per output (in order)
//   node ort_reference.js random 2x3x48x192 SEED OUT.npy
//       writes uniform [-1, 1) f32 values from a fixed-seed generator
//   node ort_reference.js compare ACTUAL.npy EXPECTED.npy RTOL
//       prints "max_rel_err=<e>" (|a - e| / max(|e|, 1e-6) over all elements); exit 1 when
//       shapes differ or the error exceeds RTOL
//   node ort_reference.js time MODEL.onnx THREADS ITERATIONS IN0.npy [IN1.npy ...]
//       prints "median_ms=<t>": the median wall time of ITERATIONS runs after 3 warm-up runs,
//       with THREADS intra-op threads and one inter-op thread (bench/zoo/run.sh)
// onnxruntime-node is found through NODE_PATH (tools/fetch_test_models.sh installs it); the
// `random` and `compare` modes do not load it.
'use strict';
const fs = require('fs');
const path = require('path');
let ort = null;  // loaded by `run` only

const kTypes = {  // npy descr -> [ort type, TypedArray]
  '<f4': ['float32', Float32Array], '<f8': ['float64', Float64Array],
  '<i8': ['int64', BigInt64Array], '<i4': ['int32', Int32Array],
  '|i1': ['int8', Int8Array], '|u1': ['uint8', Uint8Array], '|b1': ['bool', Uint8Array],
};

function readNpy(file) {
  const buf = fs.readFileSync(file);
  const hlen = buf.readUInt16LE(8);
  const header = buf.toString('latin1', 10, 10 + hlen);
  const descr = /'descr':\s*'([^']+)'/.exec(header)[1];
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header)[1].split(',').map(s => s.trim())
      .filter(s => s.length).map(Number);
  const [type, Arr] = kTypes[descr] || (() => { throw new Error(`${file}: dtype ${descr}`); })();
  const bytes = buf.subarray(10 + hlen);
  const data = new Arr(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length));
  return {type, data, dims: shape};
}

function writeNpy(file, tensor) {
  const descr = Object.keys(kTypes).find(k => kTypes[k][0] === tensor.type);
  if (!descr) throw new Error(`output type ${tensor.type} unsupported`);
  const dims = tensor.dims;
  const shape = dims.length === 1 ? `(${dims[0]},)` : `(${dims.join(', ')})`;
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': ${shape}, }`;
  while ((10 + header.length + 1) % 64) header += ' ';
  header += '\n';
  const pre = Buffer.alloc(10);
  pre.write('\x93NUMPY', 0, 'latin1');
  pre[6] = 1; pre[7] = 0;
  pre.writeUInt16LE(header.length, 8);
  const data = tensor.data;
  const body = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  fs.writeFileSync(file, Buffer.concat([pre, Buffer.from(header, 'latin1'), body]));
}

async function run([model, outDir, ...inputs]) {
  ort = require('onnxruntime-node');
  const session = await ort.InferenceSession.create(model);
  const feeds = {};
  session.inputNames.forEach((name, i) => {
    const t = readNpy(inputs[i]);
    feeds[name] = new ort.Tensor(t.type, t.data, t.dims);
  });
  const results = await session.run(feeds);
  session.outputNames.forEach((name, i) => writeNpy(path.join(outDir, `out${i}.npy`), results[name]));
}

async function time([model, threads, iterations, ...inputs]) {
  ort = require('onnxruntime-node');
  const session = await ort.InferenceSession.create(model, {
    intraOpNumThreads: Number(threads), interOpNumThreads: 1, executionMode: 'sequential',
    graphOptimizationLevel: 'all'});
  const feeds = {};
  session.inputNames.forEach((name, i) => {
    const t = readNpy(inputs[i]);
    feeds[name] = new ort.Tensor(t.type, t.data, t.dims);
  });
  for (let i = 0; i < 3; ++i) await session.run(feeds);
  const ms = [];
  for (let i = 0; i < Number(iterations); ++i) {
    const start = process.hrtime.bigint();
    await session.run(feeds);
    ms.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  ms.sort((a, b) => a - b);
  console.log(`median_ms=${ms[ms.length >> 1].toFixed(3)}`);
}

function random([shape, seed, out]) {
  const dims = shape.split('x').map(Number);
  const n = dims.reduce((a, b) => a * b, 1);
  const data = new Float32Array(n);
  let s = (Number(seed) >>> 0) || 1;
  for (let i = 0; i < n; ++i) {  // xorshift32
    s ^= s << 13; s >>>= 0; s ^= s >>> 17; s ^= s << 5; s >>>= 0;
    data[i] = (s / 4294967296) * 2 - 1;
  }
  writeNpy(out, {type: 'float32', data, dims});
}

function compare([actual, expected, rtol]) {
  const a = readNpy(actual), e = readNpy(expected);
  if (a.dims.join('x') !== e.dims.join('x') || a.type !== e.type) {
    console.log(`mismatch: ${a.type} ${a.dims.join('x')} vs ${e.type} ${e.dims.join('x')}`);
    process.exit(1);
  }
  let worst = 0;
  for (let i = 0; i < e.data.length; ++i) {
    const err = Math.abs(Number(a.data[i]) - Number(e.data[i])) / Math.max(Math.abs(Number(e.data[i])), 1e-6);
    if (!(err <= worst)) worst = err;  // NaN propagates
  }
  console.log(`max_rel_err=${worst.toExponential(3)}`);
  if (!(worst <= Number(rtol))) process.exit(1);
}

const [mode, ...args] = process.argv.slice(2);
const modes = {run, random, compare, time};
if (!modes[mode]) {
  console.error('usage: ort_reference.js run|random|compare|time ...');
  process.exit(2);
}
Promise.resolve(modes[mode](args)).catch(e => { console.error(`ort_reference: ${e.message}`); process.exit(1); });
