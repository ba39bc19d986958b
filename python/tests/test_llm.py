"""hexir.Parameters and hexir.generate with stories260K (llama2.c, and converted to GGUF)
against the golden ids of an independent PyTorch reference (tests/llm/stories260K_greedy_ids.txt),
and with a Hugging Face safetensors folder against tests/llm/hf_llama.py's NumPy reference."""
import os
import subprocess
import sys

import numpy as np
import pytest

import hexir

SHARED = os.environ.get("HEXIR_SHARED_DIR", "/work/shared")
CHECKPOINT = os.path.join(SHARED, "models", "stories260K.bin")
GOLDEN = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "llm", "stories260K_greedy_ids.txt")


@pytest.fixture(scope="module")
def stories():
    if not os.path.exists(CHECKPOINT):
        pytest.skip(f"{CHECKPOINT} is absent")
    module = hexir.load(hexir.compile(hexir.import_model(CHECKPOINT, cache_len=64)))
    return module, hexir.Parameters(CHECKPOINT)


def golden_ids():
    with open(GOLDEN) as f:
        return [int(t) for t in f.read().split()[1:]]


def test_generate_yields_the_reference_greedy_ids(stories):
    module, parameters = stories
    ids = list(hexir.generate(module, parameters, max_tokens=30))
    assert ids == golden_ids()[:30]


def test_parameters_are_uploaded_once_and_shared_by_calls(stories):
    module, parameters = stories
    device = module.device
    list(hexir.generate(module, parameters, max_tokens=4))
    live = device.stats()["buffers_live"]
    uploads = parameters.uploads
    for _ in range(3):
        t = module.generate(np.array([1], np.int64), 4, parameters)
        assert t.numpy()[:4].tolist() == golden_ids()[:4]
    assert parameters.uploads == uploads == 1
    assert device.stats()["buffers_live"] <= live + 1  # the last result only
    assert len(parameters) == len(parameters.names) and parameters.names[0] == "token_embedding"
    assert parameters.config["vocab_size"] == 512


def test_a_prompt_outside_the_vocabulary_or_the_cache_is_refused(stories):
    module, parameters = stories
    with pytest.raises(hexir.Error, match=r"prompt token 1 is 999, outside the vocabulary 0..511"):
        hexir.generate(module, parameters, prompt_ids=[1, 999])
    with pytest.raises(hexir.Error, match=r"the prompt has 65 tokens but module 'module' has a KV cache of 64"):
        hexir.generate(module, parameters, prompt_ids=[1] * 65)


def test_parameters_of_another_checkpoint_shape_name_the_tensor(stories, tmp_path):
    module, _ = stories
    with pytest.raises(hexir.Error, match="cannot open parameters"):
        hexir.Parameters(tmp_path / "missing.bin")
    from conftest import MLP, vmfb
    mlp = hexir.load(vmfb(MLP))
    with pytest.raises(hexir.Error, match=r"module 'module': @main takes 1 arguments but checkpoint '.*stories260K.bin' has \d+ weight tensors"):
        mlp.main(stories[1])


def test_streamed_tokens_arrive_before_the_remaining_chunks_run(stories):
    module, parameters = stories
    stats = module.device.stats
    tokens = hexir.generate(module, parameters, max_tokens=30, stream=True)
    first = next(tokens)
    dispatched_at_first = stats()["dispatches_executed"]
    rest = list(tokens)
    assert [first] + rest == golden_ids()[:30]  # temperature 0: greedy
    assert stats()["dispatches_executed"] > dispatched_at_first  # later chunks ran after the first yield


def test_a_fixed_seed_samples_the_same_ids_and_another_seed_others(stories):
    module, parameters = stories
    a = list(hexir.generate(module, parameters, max_tokens=24, temperature=0.9, seed=7))
    assert a == list(hexir.generate(module, parameters, max_tokens=24, temperature=0.9, seed=7, stream=True))
    assert a != list(hexir.generate(module, parameters, max_tokens=24, temperature=0.9, seed=8))


def test_bad_sampler_settings_are_refused_by_name(stories):
    module, parameters = stories
    with pytest.raises(hexir.Error, match=r"top-p 1.5 must be in \[0, 1\]"):
        hexir.generate(module, parameters, temperature=0.5, top_p=1.5)
    with pytest.raises(hexir.Error, match=r"repeat-last-n 65 must be in \[0, 64\]"):
        hexir.generate(module, parameters, stream=True, repeat_last_n=65)


TO_GGUF = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "llm", "llama2c_to_gguf.py")


def test_a_gguf_conversion_of_stories260k_imports_binds_and_generates_the_reference_ids(tmp_path):
    if not os.path.exists(CHECKPOINT):
        pytest.skip(f"{CHECKPOINT} is absent")
    gguf = tmp_path / "stories260K.gguf"
    subprocess.run([sys.executable, TO_GGUF, CHECKPOINT, "-", str(gguf)], check=True)  # f32, no tokenizer
    module = hexir.load(hexir.compile(hexir.import_model(gguf, cache_len=64)))
    parameters = hexir.Parameters(gguf)
    assert parameters.config["vocab_size"] == 512
    assert list(hexir.generate(module, parameters, max_tokens=30)) == golden_ids()[:30]


HF_WRITER = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "llm", "hf_llama.py")
HF_PROMPT = (72, 101, 289, 111)


@pytest.fixture(scope="module")
def hf_folder(tmp_path_factory):
    """A random LlamaForCausalLM folder (config.json + model.safetensors), as hf_test.sh's f32."""
    folder = tmp_path_factory.mktemp("hf") / "f32"
    subprocess.run([sys.executable, HF_WRITER, "write", str(folder), "--dtype", "f32", "--heads", "4",
                    "--kv-heads", "2", "--theta", "500000", "--seed", "4"], check=True)
    return folder


def test_a_safetensors_folder_imports_binds_and_generates_the_numpy_reference_ids(hf_folder):
    want = subprocess.run([sys.executable, HF_WRITER, "generate", str(hf_folder), "--prompt-ids",
                           ",".join(map(str, HF_PROMPT)), "--steps", "20"],
                          check=True, capture_output=True, text=True).stdout.split()
    module = hexir.load(hexir.compile(hexir.import_model(hf_folder)))
    parameters = hexir.Parameters(hf_folder)
    assert parameters.config["vocab_size"] == 316 and parameters.config["n_kv_heads"] == 2
    assert "layer0.wq" in parameters.names
    got = list(hexir.generate(module, parameters, prompt_ids=HF_PROMPT, max_tokens=20))
    assert want[0] == "ids:" and len(want) == 21  # 20 ids: the seed runs every step
    assert got == [int(t) for t in want[1:]]
