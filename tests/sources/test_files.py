"""Policy files and directories: what is read, and what a mounted ConfigMap volume looks like."""

from __future__ import annotations

import os
from pathlib import Path

from celmut.sources.documents import load_documents
from celmut.sources.files import FileSource

POLICY = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: one}\n"


def configmap_volume(root: Path) -> Path:
    """The layout kubelet writes for a ConfigMap volume: a timestamped directory, ``..data`` linking
    to it, and one link per key."""
    stamped = root / "..2026_11_22_08_00_00.123456789"
    stamped.mkdir(parents=True)
    (stamped / "policy.yaml").write_text(POLICY)
    os.symlink(stamped.name, root / "..data")
    os.symlink("..data/policy.yaml", root / "policy.yaml")
    return root


def test_a_mounted_configmap_is_read_once(tmp_path: Path) -> None:
    volume = configmap_volume(tmp_path / "volume")
    assert [d.path for d in load_documents(volume)] == [str(volume / "policy.yaml")]
    documents, errors = FileSource([str(volume)]).documents()
    assert len(documents) == 1 and errors == []


def test_hidden_files_are_skipped_and_others_read_in_order(tmp_path: Path) -> None:
    (tmp_path / "b.yaml").write_text(POLICY)
    (tmp_path / "a.json").write_text('{"kind": "ConfigMap"}')
    (tmp_path / ".editor-swap.yaml").write_text(POLICY)
    (tmp_path / "notes.txt").write_text("not a document")
    assert [Path(d.path).name for d in load_documents(tmp_path)] == ["a.json", "b.yaml"]


def test_the_fingerprint_changes_when_a_file_changes(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(POLICY)
    source = FileSource([str(tmp_path)])
    before = source.fingerprint()
    (tmp_path / "a.yaml").write_text(POLICY + "data: {k: v}\n")
    assert source.fingerprint() != before
