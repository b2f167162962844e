"""The analysed CEL grammar is cached between processes (issue 15, item 6: a one-shot command starts
without rebuilding Lark's LALR tables), only in a directory of the user's own, never in the shared
temporary directory Lark would pick, where another user could plant the pickle it loads."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from celmut.cel.parser import _grammar_cache

ROOT = Path(__file__).resolve().parents[2]


def test_the_cache_is_a_private_directory_under_xdg_cache_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    path = _grammar_cache("grammar text")
    assert isinstance(path, str) and Path(path).parent == tmp_path / "celmut"
    assert (tmp_path / "celmut").stat().st_mode & 0o777 == 0o700
    assert _grammar_cache("another grammar") != path  # the file name follows the grammar


def test_no_cache_in_a_relative_directory(monkeypatch: pytest.MonkeyPatch) -> None:
    """XDG says relative paths are invalid; one would also put the cache wherever celmut runs."""
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/dir")
    assert _grammar_cache("grammar text") is False


def test_no_cache_in_a_directory_of_another_user_or_not_writable(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    directory = tmp_path / "celmut"
    directory.mkdir(mode=0o700)
    if os.getuid() == 0:  # root can hand the directory to someone else: the pickle there is not trusted
        os.chown(directory, 65534, 65534)
    else:  # anyone else can make it read-only
        directory.chmod(0o500)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert _grammar_cache("grammar text") is False


def test_a_second_process_parses_with_the_cached_tables(tmp_path: Path) -> None:
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    command = [sys.executable, "-m", "celmut", "eval", "[1, 2].map(x, x * 2)[?1].orValue(0)", "--compact"]
    first = subprocess.run(command, env=env, capture_output=True, text=True, cwd=ROOT, check=True)
    (cached,) = (tmp_path / "celmut").iterdir()
    written = cached.stat().st_mtime_ns
    second = subprocess.run(command, env=env, capture_output=True, text=True, cwd=ROOT, check=True)
    assert first.stdout == second.stdout == "4\n"
    assert cached.stat().st_mtime_ns == written  # loaded, not rebuilt and rewritten
