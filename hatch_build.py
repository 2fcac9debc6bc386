"""Build hook: compile the ingest engine (crates/, Rust) into ranktrace._core.

hatchling stays the build backend because parsers/, queries/ and
sample_logs/ ship inside the wheel under ranktrace/_data (force-include),
which maturin's `include` cannot place; this hook does the one thing
maturin would: `cargo build --release` of the PyO3 crate, and the library
goes into the wheel as ranktrace/_core.abi3.so (abi3: one build for every
CPython >= 3.11). Editable installs get it beside the sources."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

ROOT = Path(__file__).resolve().parent
LIB = {"linux": "lib_core.so", "darwin": "lib_core.dylib", "win32": "_core.dll"}
EXT = ".pyd" if sys.platform == "win32" else ".abi3.so"
CATALOG = "_catalog.pickle"


class CoreBuildHook(BuildHookInterface):
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict) -> None:
        cargo = shutil.which("cargo") or str(Path.home() / ".cargo" / "bin" / "cargo")
        if not Path(cargo).exists():
            raise RuntimeError("ranktrace needs a Rust toolchain to build its ingest engine: "
                               "install one (https://rustup.rs) and retry `pip install .`")
        target = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "crates" / "target"))
        # pip's isolated build puts its own random /tmp/pip-build-env-*/ dirs first on PATH; pyo3-ffi's
        # build script reruns when PATH changes, and pyo3 with everything above it is rebuilt (2+ min a
        # build). Those dirs hold the build backend's scripts, nothing cargo or pyo3 looks for.
        path = os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep) if "pip-build-env-" not in p)
        subprocess.run([cargo, "build", "--release", "--locked", "-p", "ranktrace-py",
                        "--manifest-path", str(ROOT / "crates" / "Cargo.toml")],
                       check=True, env={**os.environ, "CARGO_TARGET_DIR": str(target), "PATH": path})
        built = target / "release" / LIB.get(sys.platform, "lib_core.so")
        if version == "editable":
            shutil.copy2(built, ROOT / "src" / "ranktrace" / f"_core{EXT}")
        else:
            build_data["force_include"][str(built)] = f"ranktrace/_core{EXT}"
        # The bundled catalog, loaded and checked once here rather than on
        # every command (ranktrace.formats.precomputed says when it is used).
        catalog = (ROOT / "src" / "ranktrace" if version == "editable" else target) / CATALOG
        if self._precompute_catalog(catalog) and version != "editable":
            build_data["force_include"][str(catalog)] = f"ranktrace/{CATALOG}"
        build_data["pure_python"] = False
        build_data["infer_tag"] = True

    def _precompute_catalog(self, out: Path) -> bool:
        """Write the precomputed catalog to `out` with the sources' own loader
        (in a child: only the standard library is needed, and this process
        is hatchling's). A catalog that does not load is no build failure:
        it is left to fail, with its message, where it is loaded."""
        out.unlink(missing_ok=True)   # never leave a stale one behind (it would be ignored anyway)
        env = {k: v for k, v in os.environ.items() if k != "RANKTRACE_FORMATS"}
        env["PYTHONPATH"] = str(ROOT / "src")
        code = "import sys; from pathlib import Path; from ranktrace.formats import write_precomputed; " \
               "write_precomputed(Path(sys.argv[1]))"
        got = subprocess.run([sys.executable, "-c", code, str(out)], env=env, cwd=ROOT,
                             capture_output=True, text=True)
        if got.returncode != 0:
            self.app.display_warning("ranktrace: the bundled catalog was not precomputed (each command "
                                     f"will load and check it): {got.stderr.strip().splitlines()[-1:]}")
            return False
        return True
