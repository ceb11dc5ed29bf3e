"""srcjax installs as one package: the repository's transpiler/, codegen/ and runtime/ are srcjax.transpiler,
srcjax.codegen and srcjax.runtime once installed, so a user's own runtime.py beside their script changes nothing.

The install test builds the project non-editably into a fresh virtual environment. Its dependencies come from the
environment running the tests (symbolic links to their folders, without anything of srcjax's), so it needs no
package index.
"""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys
import sysconfig
import tomllib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
FOLDERS = {
    "srcjax": "srcjax", "srcjax.transpiler": "transpiler", "srcjax.codegen": "codegen", "srcjax.runtime": "runtime",
}


def test_the_package_list_names_every_package_folder():
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert setuptools["package-dir"] == FOLDERS
    found = set()
    for package, folder in FOLDERS.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            parts = init.parent.relative_to(ROOT / folder).parts
            found.add(".".join((package, *parts)))
    assert sorted(setuptools["packages"]) == sorted(found)


def test_nothing_imports_the_folders_as_top_level_packages():
    import srcjax  # noqa: F401
    import srcjax.codegen.cache  # noqa: F401
    import srcjax.lax  # noqa: F401
    import srcjax.random  # noqa: F401

    assert not [name for name in sys.modules if name.split(".")[0] in ("transpiler", "codegen", "runtime")]


USER_SCRIPT = """
import warnings
warnings.simplefilter("error")  # a fallback to the interpreter would warn
import runtime, codegen, transpiler  # the user's own modules, beside this script
assert (runtime.MINE, codegen.MINE, transpiler.MINE) == (1, 2, 3)
import numpy as np
import srcjax as jax
import srcjax.numpy as jnp

f = jax.jit(lambda x: jnp.tanh(x) * 2.0 + jnp.sum(x))
x = jnp.arange(5.0)
compiled = f.lower(x).compile()
assert compiled.native is not None, compiled.native_error
np.testing.assert_allclose(np.asarray(f(x)), np.tanh(np.arange(5.0)) * 2.0 + 10.0, rtol=1e-6)
print("native", jax.__file__)
"""


def _dependencies_folder(tmp: pathlib.Path) -> pathlib.Path:
    """A folder of links to what this environment's site-packages holds, less srcjax and its traces."""
    site = pathlib.Path(sysconfig.get_paths()["purelib"])
    deps = tmp / "deps"
    deps.mkdir()
    for entry in site.iterdir():
        name = entry.name.lower()
        if entry.suffix == ".pth" or "srcjax" in name or name.startswith(("__editable__", "__pycache__")):
            continue
        (deps / entry.name).symlink_to(entry)
    return deps


def _site_entries(venv: pathlib.Path) -> set[str]:
    (site,) = venv.glob("lib/python*/site-packages")
    return {p.name for p in site.iterdir()}


@pytest.mark.slow
def test_a_normal_install_adds_only_srcjax_and_ignores_the_users_modules(tmp_path):
    source = tmp_path / "source"  # (a copy: building writes build/ and *.egg-info beside the sources)
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    for folder in FOLDERS.values():
        shutil.copytree(ROOT / folder, source / folder, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    (site,) = venv.glob("lib/python*/site-packages")
    (site / "test_dependencies.pth").write_text(f"{_dependencies_folder(tmp_path)}\n")
    before = _site_entries(venv)
    env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INDEX": "1"}
    env.pop("PYTHONPATH", None)
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-deps",
         "--no-build-isolation", str(source)],
        check=True, env=env, cwd=tmp_path,
    )
    added = _site_entries(venv) - before
    assert {name for name in added if not name.endswith(".dist-info")} == {"srcjax"}
    (record,) = site.glob("srcjax-*.dist-info/RECORD")
    top_level = {line.split("/")[0] for line in record.read_text().splitlines() if not line.startswith("..")}
    assert {name for name in top_level if not name.endswith(".dist-info")} == {"srcjax"}

    user = tmp_path / "user"
    user.mkdir()
    for i, name in enumerate(("runtime", "codegen", "transpiler"), 1):
        (user / f"{name}.py").write_text(f"MINE = {i}\n")
    (user / "script.py").write_text(USER_SCRIPT)
    run = subprocess.run([str(python), "script.py"], cwd=user, env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("native") and str(site) in run.stdout

    elsewhere = subprocess.run([str(python), "-c", "import runtime"], cwd=tmp_path, env=env, capture_output=True,
                               text=True)
    assert "No module named 'runtime'" in elsewhere.stderr
