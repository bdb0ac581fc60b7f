#!/usr/bin/env python3
"""Runs the command blocks of README.md and docs/*.md, each alone, so that
the documentation cannot go stale silently (docs/README.md, "Conventions").

    doc_blocks.py [--slow | --all] [--list] FILE.md...

A fenced block whose language is sh, python or c runs: sh with `sh -e`,
python with $PYTHON_TORCH (else python3), c compiled with -Wall -Wextra
-Werror against the build tree's library and run. Every block runs in a
fresh temporary directory, with `polydnn` and `python3` first on PATH (the
build's tool, the Python that has PyTorch) and the module and library of
the build tree. Markers, on the line(s) just above the fence:

    <!-- doc-test: skip (why) -->     never run here (a GPU, mpirun, apt-get)
    <!-- doc-test: slow (why) -->     run by --slow (make check-models), not make check
    <!-- doc-test: expect TEXT -->    the output (stdout and stderr) must contain TEXT

A skip or slow marker must give its reason, and every relative link must
lead to a file. Blocks in other languages, or
none, are output samples and are not run. Exit 0 when every block that ran
passed, 1 otherwise.
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile

FENCE = re.compile(r"^\s*```([A-Za-z0-9_+-]*)\s*$")
MARKER = re.compile(r"^\s*<!-- doc-test: (skip|slow|expect) ?(.*?) ?-->\s*$")
RUNNABLE = ("sh", "python", "c")


def blocks(path):
    """(line, language, code, markers) for each fenced block of path."""
    out = []
    lines = open(path, encoding="utf-8").read().split("\n")
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        lang, start = m.group(1), i
        markers = []
        j = i - 1
        while j >= 0 and MARKER.match(lines[j]):
            markers.insert(0, MARKER.match(lines[j]).groups())
            j -= 1
        i += 1
        body = []
        while i < len(lines) and lines[i].strip() != "```":
            body.append(lines[i])
            i += 1
        if i == len(lines):
            raise SystemExit("%s:%d: unterminated ``` block" % (path, start + 1))
        out.append((start + 1, lang, "\n".join(body) + "\n", markers))
        i += 1
    return out


def environment(bindir):
    top_src = os.environ.get("PDNN_TOP_SRCDIR") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    top_build = os.environ.get("PDNN_TOP_BUILDDIR") or top_src
    env = dict(os.environ)
    tool = os.environ.get("POLYDNN_TOOL") or os.path.join(top_build, "polydnn")
    os.symlink(tool, os.path.join(bindir, "polydnn"))
    python = os.environ.get("PYTHON_TORCH") or shutil.which("python3")
    os.symlink(python, os.path.join(bindir, "python3"))
    env["PATH"] = bindir + os.pathsep + env.get("PATH", "")
    env["POLYDNN_LIBRARY"] = os.path.join(top_build, ".libs", "libpolydnn.so.1")
    for var, first in (("PYTHONPATH", os.path.join(top_src, "python")),
                       ("LD_LIBRARY_PATH", os.path.join(top_build, ".libs"))):
        env[var] = first + (os.pathsep + env[var] if env.get(var) else "")
    env.pop("POCL_DEVICES", None)  # a block that wants two PoCL devices says so itself
    return env, top_src, python


def run_block(lang, code, env, top_src, python, workdir):
    if lang == "sh":
        cmd = ["sh", "-e", "-c", code]
    elif lang == "python":
        cmd = [python, "-c", code]
    else:
        src = os.path.join(workdir, "example.c")
        with open(src, "w") as f:
            f.write(code)
        exe = os.path.join(workdir, "example")
        cc = subprocess.run([os.environ.get("CC", "cc"), "-std=c11", "-Wall", "-Wextra", "-Werror",
                             "-I" + os.path.join(top_src, "src"), src, "-o", exe,
                             "-L" + env["LD_LIBRARY_PATH"].split(os.pathsep)[0], "-lpolydnn"],
                            capture_output=True, text=True)
        if cc.returncode:
            return cc.returncode, cc.stdout + cc.stderr
        cmd = [exe]
    r = subprocess.run(cmd, cwd=workdir, env=env, capture_output=True, text=True, timeout=600)
    return r.returncode, r.stdout + r.stderr


def main(argv):
    want_slow = "--slow" in argv or "--all" in argv
    want_quick = "--slow" not in argv
    listing = "--list" in argv
    files = [a for a in argv if not a.startswith("--")]
    if not files:
        raise SystemExit(__doc__)
    tmp = tempfile.mkdtemp(prefix="pdnn-docs-")
    bindir = os.path.join(tmp, "bin")
    os.mkdir(bindir)
    env, top_src, python = environment(bindir)
    has_torch = subprocess.run([python, "-c", "import torch"], capture_output=True).returncode == 0
    passed = failed = skipped = 0
    try:
        for path in files:
            name = os.path.relpath(path, top_src) if os.path.isabs(path) else path
            text = open(path, encoding="utf-8").read()
            prose = re.sub(r"`[^`\n]*`", "", re.sub(r"^```.*?^```", "", text, flags=re.S | re.M))
            for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", prose):  # relative links must lead somewhere
                if not os.path.exists(os.path.join(os.path.dirname(path), target)):
                    print("FAIL %s: link to %s, which does not exist" % (name, target))
                    failed += 1
            for line, lang, code, markers in blocks(path):
                where = "%s:%d (%s)" % (name, line, lang or "sample")
                kinds = {k: v for k, v in markers if k != "expect"}
                for k, v in kinds.items():
                    if not v.strip("() "):
                        print("FAIL %s: a '%s' marker must say why" % (where, k))
                        failed += 1
                if lang not in RUNNABLE:
                    if markers:
                        print("FAIL %s: doc-test markers on a block that never runs" % where)
                        failed += 1
                    continue
                slow = "slow" in kinds
                if "skip" in kinds or (slow and not want_slow) or (not slow and not want_quick):
                    skipped += 1
                    if listing:
                        print("skip %s %s" % (where, kinds.get("skip") or kinds.get("slow") or "(not this run)"))
                    continue
                if "torch" in code and not has_torch:
                    print("SKIP %s: %s has no PyTorch (set PYTHON_TORCH)" % (where, python))
                    skipped += 1
                    continue
                workdir = tempfile.mkdtemp(dir=tmp)
                try:
                    rc, output = run_block(lang, code, env, top_src, python, workdir)
                except subprocess.TimeoutExpired:
                    rc, output = -1, "timed out after 600 s"
                missing = [v for k, v in markers if k == "expect" and v not in output]
                if rc == 0 and not missing:
                    print("PASS %s" % where)
                    passed += 1
                else:
                    print("FAIL %s: exit %d%s\n%s" % (where, rc, "; output lacks %r" % missing if missing else "",
                                                      "\n".join("    " + s for s in output.splitlines()[-30:])))
                    failed += 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    # the summary line tests/test_cli.sh prints, which CI adds up
    print("%d passed, %d failed, %d skipped" % (passed, failed, skipped))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
