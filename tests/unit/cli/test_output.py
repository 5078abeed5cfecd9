"""`-o table|json|yaml`: what scripts and humans get."""

from __future__ import annotations

import json

import pytest
import typer
import yaml

from inplace.cli.output import check_format, plain_table, print_document, print_rows

ROWS = [
    {"offset": 1, "event": "ResizeProposed", "detail": "x" * 300},
    {"offset": 12, "event": "ResizeStatusChanged", "detail": {"resize": "InProgress"}},
]


def test_plain_table_never_cuts_a_cell() -> None:
    text = plain_table(["offset", "event", "detail"], ROWS)
    header, first, second = text.splitlines()
    assert header.split() == ["OFFSET", "EVENT", "DETAIL"]
    assert "x" * 300 in first and first.split()[1] == "ResizeProposed"
    assert second.split() == ["12", "ResizeStatusChanged", '{"resize":"InProgress"}']


def test_rows_when_piped_are_plain_full_cells(capsys: pytest.CaptureFixture[str]) -> None:
    print_rows(ROWS, ["offset", "event", "detail"], "table")  # captured stdout is no terminal
    out = capsys.readouterr().out
    assert "x" * 300 in out and "…" not in out


def test_rows_as_json_lines_and_yaml(capsys: pytest.CaptureFixture[str]) -> None:
    print_rows(ROWS, ["offset", "event"], "json")
    assert [json.loads(line) for line in capsys.readouterr().out.splitlines()] == ROWS
    print_rows(ROWS, ["offset", "event"], "yaml")
    assert yaml.safe_load(capsys.readouterr().out) == ROWS


def test_documents(capsys: pytest.CaptureFixture[str]) -> None:
    assert print_document({"checksum": "abc", "counts": {"pods": 3}}, "json")
    assert json.loads(capsys.readouterr().out) == {"checksum": "abc", "counts": {"pods": 3}}
    assert print_document({"a": [1, 2]}, "yaml")
    assert yaml.safe_load(capsys.readouterr().out) == {"a": [1, 2]}
    assert not print_document({"a": 1}, "table")


def test_bad_format_is_exit_2() -> None:
    assert check_format("yaml") == "yaml"
    with pytest.raises(typer.Exit) as err:
        check_format("xml")
    assert err.value.exit_code == 2
