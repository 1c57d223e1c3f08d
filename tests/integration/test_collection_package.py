# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The collection as AWX / Automation Platform gets it (issue 32, part 1): tarball, offline install, EE context.

Offline, no container engine. ``ansible-galaxy collection build`` gives a tarball with only shipped content
(an allow-list of top-level entries: no tests, lab, bench, molecule, caches) whose MANIFEST.json carries
galaxy.yml's version and dependencies. Each declared dependency is built into a tarball from the copy the
``ansible`` package bundles, all in one local directory; ``ansible-galaxy collection install --offline`` into a
clean path that sees no other collection refuses our tarball alone (the dependency is really declared) and
installs it with the directory's tarballs; a module of ours then runs from that path only. ``ansible-builder
create`` gives the EE build context of ``execution-environment.yml`` (the pinned base image, ansible-core and
ansible-runner, our Python and bindep requirements, the tarball and the requirements.yml that installs it),
and ``ansible-builder introspect`` of the clean install finds meta/execution-environment.yml's requirements.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import ast
import glob
import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile

import pytest
import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VENV_BIN = os.path.join(REPO, ".venv", "bin")
GALAXY = yaml.safe_load(open(os.path.join(REPO, "galaxy.yml")))
EE_FILE = os.path.join(REPO, "execution-environment.yml")
TARBALL = "%s-%s-%s.tar.gz" % (GALAXY["namespace"], GALAXY["name"], GALAXY["version"])
FQCN = "%s.%s" % (GALAXY["namespace"], GALAXY["name"])
# What the tarball may hold at its top level: the collection's content, nothing of the checkout.
SHIPPED = {"MANIFEST.json", "FILES.json", "README.md", "LICENSE", "changelogs", "data", "docs", "extensions", "inventories",
           "meta", "playbooks", "plugins", "roles"}
NOT_SHIPPED = ("tests", "lab", "bench", "molecule", "evidence", ".cache", ".ci", ".venv", "requirements", "dra-gate",
               "build", "bundles", "pytest.ini", "execution-environment.yml", ".git", ".gitignore", ".ansible-lint")
# Imported by plugins/ but brought by another requirement (kubernetes -> urllib3) or only on an older Python
# (tomli before 3.11, Queue on 2).
INDIRECT = {"urllib3", "tomli", "Queue"}


def run(*argv, env=None, cwd=None, timeout=120):
    argv = [os.path.join(VENV_BIN, argv[0])] + list(argv[1:])
    return subprocess.run(argv, cwd=cwd or REPO, env=env or tool_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, timeout=timeout, check=False)


def tool_env(**extra):
    env = dict(os.environ)
    env["PATH"] = VENV_BIN + os.pathsep + env.get("PATH", "")
    env.pop("ANSIBLE_COLLECTIONS_PATH", None)
    env.update({"ANSIBLE_NOCOLOR": "1", "ANSIBLE_FORCE_COLOR": "0", "ANSIBLE_LOCALHOST_WARNING": "false",
                "ANSIBLE_DEPRECATION_WARNINGS": "false", "PYTHONWARNINGS": "ignore"})
    env.update(extra)
    return env


def isolated_env(collections, home):
    """Ansible that sees the collections under ``collections`` only: not .cache/collections, not
    ~/.ansible, not the ones the ansible package puts on sys.path."""
    return tool_env(ANSIBLE_COLLECTIONS_PATH=str(collections), ANSIBLE_COLLECTIONS_SCAN_SYS_PATH="false",
                    ANSIBLE_HOME=str(home), HOME=str(home))


def requirement_lines(path):
    with open(path) as handle:
        return [line.split("#", 1)[0].strip() for line in handle if line.split("#", 1)[0].strip()]


def pins(path):
    """{lower-cased name: version} of a requirements file's ``name==version`` lines (``-r`` followed)."""
    found = {}
    for line in requirement_lines(path):
        if line.startswith("-r"):
            found.update(pins(os.path.join(os.path.dirname(path), line.split(None, 1)[1])))
        elif "==" in line:
            name, version = line.split("==", 1)
            found[name.strip().lower()] = version.strip()
    return found


def version_tuple(text):
    return tuple(int(part) for part in re.findall(r"\d+", text)[:3])


def in_range(version, spec):
    """``version`` satisfies a galaxy range such as ``>=6.0.0,<7.0.0`` (or ``*``)."""
    tests = {">=": lambda a, b: a >= b, ">": lambda a, b: a > b, "<=": lambda a, b: a <= b, "<": lambda a, b: a < b,
             "==": lambda a, b: a == b, "!=": lambda a, b: a != b}
    for part in [item.strip() for item in str(spec).split(",")]:
        if part == "*":
            continue
        match = re.match(r"(>=|<=|==|!=|>|<)?\s*(\S+)$", part)
        op, bound = match.group(1) or "==", match.group(2)
        if not tests[op](version_tuple(version), version_tuple(bound)):
            return False
    return True


def bundled_collection(fqcn):
    """The directory of ``fqcn`` in the ansible package (site-packages/ansible_collections/NS/NAME)."""
    namespace, name = fqcn.split(".")
    for site in sorted(glob.glob(os.path.join(REPO, ".venv", "lib", "python3*", "site-packages"))):
        path = os.path.join(site, "ansible_collections", namespace, name)
        if os.path.isfile(os.path.join(path, "MANIFEST.json")):
            return path
    pytest.fail("%s is not bundled with the ansible package in .venv" % fqcn)


def build_bundled(fqcn, workdir, output):
    """A tarball of the bundled copy of ``fqcn``, made with ``ansible-galaxy collection build``.

    The ansible package drops some files of the Galaxy artifact (FILES.json still lists them), so the
    installed copy is rebuilt from its MANIFEST.json's collection_info into a consistent tarball."""
    source = bundled_collection(fqcn)
    with open(os.path.join(source, "MANIFEST.json")) as handle:
        info = json.load(handle)["collection_info"]
    copy = os.path.join(str(workdir), fqcn)
    shutil.copytree(source, copy, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "MANIFEST.json", "FILES.json"))
    galaxy = {key: value for key, value in info.items() if value not in (None, "", [])}
    galaxy["dependencies"] = info.get("dependencies") or {}
    with open(os.path.join(copy, "galaxy.yml"), "w") as handle:
        yaml.safe_dump(galaxy, handle)
    built = run("ansible-galaxy", "collection", "build", copy, "--output-path", str(output))
    assert built.returncode == 0, built.stdout
    name = "%s-%s-%s.tar.gz" % (info["namespace"], info["name"], info["version"])
    return info["version"], os.path.join(str(output), name)


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    return tmp_path_factory.mktemp("package")


@pytest.fixture(scope="module")
def tarball(work):
    dist = work / "dist"
    built = run("ansible-galaxy", "collection", "build", REPO, "--output-path", str(dist))
    assert built.returncode == 0, built.stdout
    path = dist / TARBALL
    assert path.is_file(), (os.listdir(str(dist)), built.stdout)
    return path


@pytest.fixture(scope="module")
def dependency_dir(work):
    """One local directory holding a tarball of every dependency galaxy.yml declares."""
    deps = work / "deps"
    deps.mkdir()
    versions = {}
    for fqcn, spec in (GALAXY.get("dependencies") or {}).items():
        version, path = build_bundled(fqcn, work, deps)
        assert in_range(version, spec), "%s %s (bundled) is outside galaxy.yml's range %s" % (fqcn, version, spec)
        assert os.path.isfile(path)
        versions[fqcn] = version
    return deps, versions


@pytest.fixture(scope="module")
def installed(work, tarball, dependency_dir):
    """The clean collections path after the offline install of our tarball with the directory's tarballs."""
    deps, versions = dependency_dir
    clean, home = work / "clean", work / "home"
    home.mkdir()
    env = isolated_env(clean, home)
    result = run("ansible-galaxy", "collection", "install", "--offline", "-p", str(clean), str(tarball),
                 *sorted(glob.glob(str(deps / "*.tar.gz"))), env=env, cwd=str(work))
    assert result.returncode == 0, result.stdout
    return clean, home, versions, result.stdout


def manifest_of(tar):
    return json.load(tar.extractfile("MANIFEST.json"))


def test_the_tarball_holds_the_collection_and_nothing_of_the_checkout(tarball):
    with tarfile.open(str(tarball)) as tar:
        names = tar.getnames()
        manifest = manifest_of(tar)
        files = json.load(tar.extractfile("FILES.json"))
    top = {name.split("/", 1)[0] for name in names}
    assert top <= SHIPPED, "not collection content: %s" % sorted(top - SHIPPED)
    for name in names:
        assert name.split("/", 1)[0] not in NOT_SHIPPED, name
        assert "__pycache__" not in name.split("/") and not name.endswith(".pyc"), name
    assert {"MANIFEST.json", "FILES.json", "meta/runtime.yml", "meta/execution-environment.yml",
            "meta/ee-requirements.txt", "meta/ee-bindep.txt", "playbooks/site.yml"} <= set(names)
    assert any(name.startswith("plugins/modules/") for name in names)
    assert any(name.startswith("data/matrix/") for name in names)
    info = manifest["collection_info"]
    want = (GALAXY["namespace"], GALAXY["name"], GALAXY["version"])
    assert (info["namespace"], info["name"], info["version"]) == want
    assert info["dependencies"] == (GALAXY.get("dependencies") or {})
    listed = {entry["name"] for entry in files["files"] if entry["name"] != "."}
    assert listed == set(names) - {"MANIFEST.json", "FILES.json"}


def test_the_dependencies_are_what_the_bundled_ansible_package_provides():
    deps = GALAXY.get("dependencies") or {}
    assert "kubernetes.core" in deps
    for fqcn, spec in deps.items():
        with open(os.path.join(bundled_collection(fqcn), "MANIFEST.json")) as handle:
            version = json.load(handle)["collection_info"]["version"]
        assert in_range(version, spec), (fqcn, version, spec)


def test_the_install_alone_is_refused_offline_without_its_dependencies(work, tarball):
    alone, home = work / "alone", work / "home-alone"
    home.mkdir()
    result = run("ansible-galaxy", "collection", "install", "--offline", "-p", str(alone), str(tarball),
                 env=isolated_env(alone, home), cwd=str(work))
    assert result.returncode != 0, result.stdout
    for fqcn in GALAXY.get("dependencies") or {}:
        assert fqcn in result.stdout, result.stdout


def test_the_offline_install_puts_the_collection_and_its_dependencies_in_the_clean_path(installed):
    clean, _home, versions, _output = installed
    want = dict(versions, **{FQCN: GALAXY["version"]})
    found = {}
    for manifest in glob.glob(str(clean / "ansible_collections" / "*" / "*" / "MANIFEST.json")):
        with open(manifest) as handle:
            info = json.load(handle)["collection_info"]
        found["%s.%s" % (info["namespace"], info["name"])] = info["version"]
    assert found == want
    ours = clean / "ansible_collections" / GALAXY["namespace"] / GALAXY["name"]
    assert not (ours / "tests").exists() and not (ours / "lab").exists()


def test_a_module_runs_from_the_clean_path_only(installed, work):
    clean, home, _versions, _output = installed
    env = isolated_env(clean, home)
    doc = run("ansible-doc", "--json", "-t", "module", FQCN + ".compat_check", env=env, cwd=str(work))
    assert doc.returncode == 0, doc.stdout
    filename = json.loads(doc.stdout)[FQCN + ".compat_check"]["doc"]["filename"]
    assert filename.startswith(str(clean) + os.sep), filename
    args = {"nodes": {}, "cluster": {"kubernetes_version": "1.36.0"}, "target": {"kubernetes_version": "1.37.0"},
            "fail_on": "never"}
    result = run("ansible", "localhost", "-e", "ansible_python_interpreter=" + sys.executable,
                 "-m", FQCN + ".compat_check", "-a", json.dumps(args), env=env, cwd=str(work))
    assert result.returncode == 0, result.stdout
    answer = json.loads(result.stdout.split("localhost | SUCCESS => ", 1)[1])
    assert not answer.get("failed"), answer
    # The matrix came from the installed data/ (the target release is known, findings were evaluated).
    assert answer["findings"] and answer["counts"], answer
    assert any(finding["id"] == "operator.lifecycle" for finding in answer["findings"])


def plugin_imports():
    """Top-level names of every module the plugins import (static; relative and ansible imports left out)."""
    names = set()
    for path in glob.glob(os.path.join(REPO, "plugins", "**", "*.py"), recursive=True):
        with open(path) as handle:
            tree = ast.parse(handle.read(), path)
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
    return names - set(sys.stdlib_module_names) - {"ansible", "ansible_collections", "__future__"}


def test_the_ee_requirements_cover_the_plugins_imports_with_the_tested_pins():
    ee = pins(os.path.join(REPO, "meta", "ee-requirements.txt"))
    tested = pins(os.path.join(REPO, "requirements", "dev.txt"))
    lines = requirement_lines(os.path.join(REPO, "meta", "ee-requirements.txt"))
    assert ee and all(line.count("==") == 1 for line in lines)
    for name, version in ee.items():
        assert tested.get(name) == version, "%s==%s: requirements/ pin %s" % (name, version, tested.get(name))
    distributions = importlib.metadata.packages_distributions()
    missing = []
    for module in sorted(plugin_imports() - INDIRECT):
        dists = {dist.lower() for dist in distributions.get(module, [module])}
        if not dists & set(ee):
            missing.append("%s (%s)" % (module, ", ".join(sorted(dists))))
    assert not missing, "imported by plugins/ but not in meta/ee-requirements.txt: %s" % missing
    # Imported lazily (by name), so not seen above.
    assert "helm-python-sdk" in ee


def ee_definition():
    with open(EE_FILE) as handle:
        return yaml.safe_load(handle)


def test_the_ee_definition_pins_what_it_installs(tarball):
    ee = ee_definition()
    assert ee["version"] == 3
    image = ee["images"]["base_image"]["name"]
    registry, _slash, rest = image.partition("/")
    assert "." in registry and rest, "not fully qualified: %s" % image
    assert re.search(r":[\w][\w.-]*$", rest) and not rest.endswith(":latest"), "no pinned tag: %s" % image
    deps = ee["dependencies"]
    runtime = pins(os.path.join(REPO, "requirements", "runtime.txt"))
    assert deps["ansible_core"]["package_pip"] == "ansible-core==" + runtime["ansible-core"]
    assert re.match(r"ansible-runner==\d+\.\d+\.\d+$", deps["ansible_runner"]["package_pip"])
    assert deps["python"] == "meta/ee-requirements.txt" and deps["system"] == "meta/ee-bindep.txt"
    collections = {entry["name"]: entry for entry in deps["galaxy"]["collections"]}
    local = "build/" + tarball.name
    assert collections[local]["type"] == "file", "the EE installs %s (galaxy.yml's version)" % local
    assert [entry["src"] for entry in ee["additional_build_files"]] == [local]
    for fqcn, spec in (GALAXY.get("dependencies") or {}).items():
        assert in_range(collections[fqcn]["version"], spec), (fqcn, collections[fqcn])
    with open(os.path.join(REPO, "meta", "execution-environment.yml")) as handle:
        meta = yaml.safe_load(handle)
    assert meta["dependencies"] == {"python": "meta/ee-requirements.txt", "system": "meta/ee-bindep.txt"}


def test_ansible_builder_creates_a_complete_build_context(work, tarball):
    # The definition with the files it names, the tarball where it expects it (build/ beside it).
    ee_dir, context = work / "ee", work / "context"
    for name in ("execution-environment.yml", "meta/ee-requirements.txt", "meta/ee-bindep.txt"):
        (ee_dir / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(os.path.join(REPO, name), str(ee_dir / name))
    (ee_dir / "build").mkdir()
    shutil.copy2(str(tarball), str(ee_dir / "build" / tarball.name))
    created = run("ansible-builder", "create", "--file", str(ee_dir / "execution-environment.yml"),
                  "--context", str(context), "--output-filename", "Containerfile", cwd=str(work))
    assert created.returncode == 0, created.stdout
    assert "No matches" not in created.stdout, created.stdout
    containerfile = (context / "Containerfile").read_text()
    ee = ee_definition()
    assert "ARG EE_BASE_IMAGE=\"%s\"" % ee["images"]["base_image"]["name"] in containerfile
    assert "ansible-core==" in containerfile and ee["dependencies"]["ansible_core"]["package_pip"] in containerfile
    assert ee["dependencies"]["ansible_runner"]["package_pip"] in containerfile
    assert "ansible-galaxy collection install" in containerfile and "introspect" in containerfile
    build = context / "_build"
    assert requirement_lines(str(build / "requirements.txt")) == requirement_lines(
        os.path.join(REPO, "meta", "ee-requirements.txt"))
    assert requirement_lines(str(build / "bindep.txt")) == requirement_lines(os.path.join(REPO, "meta", "ee-bindep.txt"))
    galaxy = yaml.safe_load((build / "requirements.yml").read_text())
    names = [entry["name"] for entry in galaxy["collections"]]
    assert "build/" + tarball.name in names and "kubernetes.core" in names
    copied = build / "build" / tarball.name
    assert copied.is_file() and copied.read_bytes() == tarball.read_bytes()
    # The Containerfile copies _build/ and installs requirements.yml from there, so build/<tarball> resolves.
    assert "COPY _build /build\nWORKDIR /build\n" in containerfile
    assert "ansible-galaxy collection install $ANSIBLE_GALAXY_CLI_COLLECTION_OPTS -r requirements.yml" in containerfile
    assert (build / "scripts" / "assemble").is_file()


def test_introspection_of_the_installed_collection_finds_its_requirements(installed):
    clean, home, _versions, _output = installed
    result = run("ansible-builder", "introspect", str(clean), env=isolated_env(clean, home))
    assert result.returncode == 0, result.stdout
    data = yaml.safe_load(result.stdout)
    ours = " # from collection " + FQCN
    python = [line.replace("  #", " #") for line in data["python"]]
    # PyYAML is left out by ansible-builder (ansible-core brings it).
    for line in requirement_lines(os.path.join(REPO, "meta", "ee-requirements.txt")):
        if not line.lower().startswith("pyyaml"):
            assert line + ours in python, (line, data["python"])
    system = [line.replace("  #", " #") for line in data["system"]]
    for line in requirement_lines(os.path.join(REPO, "meta", "ee-bindep.txt")):
        assert line + ours in system, (line, data["system"])
