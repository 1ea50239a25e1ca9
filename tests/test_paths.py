"""The bundled resources are found in a checkout and in an installed package (wheel / `pip install .`)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from studio import paths

ROOT = Path(__file__).resolve().parent.parent


def test_checkout_uses_the_top_level_resources_folder():
    assert paths.RESOURCES == ROOT / "resources"
    assert paths.SAMPLE_DATABASE.is_file() and (paths.TOKENIZERS / "o200k_base.tiktoken").is_file()
    assert (paths.PROMPTS / "reflector_system.md").is_file()


def test_installed_layout_reads_resources_from_the_studio_resources_package(tmp_path):
    # What a wheel installs: site-packages/studio/ with resources/ inside it, no top-level resources/.
    site = tmp_path / "site-packages"
    shutil.copytree(ROOT / "studio", site / "studio", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "resources", site / "studio" / "resources", ignore=shutil.ignore_patterns("__pycache__"))
    code = ("import json, studio.paths as p, studio.engine.reflector_prompt as r, studio.engine.exact_counts as e; "
            "print(json.dumps([str(p.RESOURCES), str(p.SAMPLE_DATABASE), r.system_prompt()[:40], "
            "e.exact_tokens('hello world')]))")
    done = subprocess.run([sys.executable, "-c", f"import sys; sys.path.insert(0, {str(site)!r}); {code}"],
                          capture_output=True, text=True, cwd=tmp_path, env={"PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    resources, sample, system, hello = json.loads(done.stdout)
    assert resources == str(site / "studio" / "resources")
    assert sample == str(site / "studio" / "resources" / "sample" / "memory.db")
    assert system == (ROOT / "resources" / "prompts" / "reflector_system.md").read_text(encoding="utf-8").strip()[:40]
    assert hello == 2  # o200k_base: "hello", " world" (the bundled ranks loaded, offline)


def test_every_resource_file_is_shipped_in_the_wheel():
    # pyproject's package-data globs decide what a wheel carries: a resource none matches would be
    # missing from every `pip install .` (while a checkout still has it).
    import fnmatch
    import tomllib

    globs = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"][
        "package-data"]["studio.resources"]
    files = [p.relative_to(ROOT / "resources").as_posix() for p in (ROOT / "resources").rglob("*")
             if p.is_file() and "__pycache__" not in p.parts and p.name != "__init__.py"]
    assert files
    assert [f for f in files if not any(fnmatch.fnmatchcase(f, g) for g in globs)] == []


def test_sample_path_names_the_installed_sample_and_read_commands_take_it(tmp_path):
    # What a non-editable install sees (site-packages/studio/resources, no checkout beside it): the
    # `sample-path` command prints the sample importlib.resources finds in the package, `inspect`
    # reads it, and a read command without PATH says how to reach it.
    site = tmp_path / "site-packages"
    shutil.copytree(ROOT / "studio", site / "studio", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "resources", site / "studio" / "resources", ignore=shutil.ignore_patterns("__pycache__"))
    prelude = f"import sys; sys.path.insert(0, {str(site)!r}); from studio.cli import main; "

    def run(*argv):
        return subprocess.run([sys.executable, "-c", prelude + f"sys.exit(main({list(argv)!r}))"],
                              capture_output=True, text=True, cwd=tmp_path, env={"PATH": "/usr/bin:/bin"})

    done = subprocess.run([sys.executable, "-c", f"import sys; sys.path.insert(0, {str(site)!r}); "
                           "from importlib.resources import files; "
                           "print(files('studio.resources') / 'sample' / 'memory.db')"],
                          capture_output=True, text=True, cwd=tmp_path, env={"PATH": "/usr/bin:/bin"})
    packaged = done.stdout.strip()
    assert packaged == str(site / "studio" / "resources" / "sample" / "memory.db")
    shown = run("sample-path")
    assert (shown.returncode, shown.stdout, shown.stderr) == (0, packaged + "\n", "")
    as_json = run("sample-path", "--json")
    assert json.loads(as_json.stdout) == {"path": packaged}
    inspected = run("inspect", shown.stdout.strip(), "--json")
    assert inspected.returncode == 0, inspected.stderr
    document = json.loads(inspected.stdout)
    assert document["path"] == packaged and document["threads"]
    missing = run("inspect")
    assert missing.returncode == 2
    assert "memory-studio sample-path" in missing.stderr
    helped = run("doctor", "--help")
    assert "memory-studio sample-path" in " ".join(helped.stdout.split())
