"""The typed settings view that the build generates from MultiJoinConf.description
(scripts/conf_view.py), checked without Spark on a description shaped like the jar's; with Spark,
tests/test_config.py checks that the installed view is the one the jar's description gives."""

from __future__ import annotations

import ast
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import spark_multijoin
from support.modules import load_module

ROOT = Path(__file__).resolve().parent.parent
CONF_VIEW = load_module(ROOT / "scripts" / "conf_view.py")

TTL_WORDS = ("a positive duration such as '1 day', '90 minutes' or '10 seconds' (as "
             "withWatermark takes them), or '1d', '30m', '10s'")
DESCRIPTION: dict[str, Any] = {"entries": [
    {"key": "multi-join.enabled", "alternatives": ["spark.multi-join.enabled"],
     "type": "boolean", "takes": "true or false", "default": "false", "since": "0.1.0",
     "doc": "When true, chains of streaming joins on one key run as one StreamingMultiJoin."},
    {"key": "multi-join.max-tables", "alternatives": ["spark.multi-join.max-tables"],
     "type": "int", "takes": "an integer of at least 3", "default": None, "since": "0.1.0",
     "doc": "The most inputs one StreamingMultiJoin takes. Unset means no limit."},
    {"key": "multi-join.state-ttl", "alternatives": ["spark.multi-join.state-ttl"],
     "type": "string", "takes": TTL_WORDS, "default": None, "since": "0.1.0",
     "doc": "How long a multi-join keeps an input row: a duration ('1 day', \"90 minutes\")."},
    {"key": "multi-join.batch-size", "alternatives": [], "type": "int",
     "takes": "a positive integer", "default": "100", "since": "0.1.0",
     "doc": "A made-up entry with a default, to check what is generated for one."},
]}


class FakeConf:
    """spark.conf over a dict, as the view uses it."""

    def __init__(self) -> None:
        self.values: dict[str, str] = {}

    def get(self, key: str, default: str | None = None) -> str | None:
        return self.values.get(key, default)

    def set(self, key: str, value: object) -> None:
        self.values[key] = str(value).lower() if isinstance(value, bool) else str(value)

    def unset(self, key: str) -> None:
        self.values.pop(key, None)


class FakeSpark:
    def __init__(self) -> None:
        self.conf = FakeConf()


@pytest.fixture(scope="module")
def view(tmp_path_factory) -> ModuleType:
    path = tmp_path_factory.mktemp("view") / CONF_VIEW.MODULE
    path.write_text(CONF_VIEW.render(DESCRIPTION))
    return load_module(path)


def test_each_entry_is_a_key_constant_and_a_typed_property_with_its_doc(view):
    assert (view.ENABLED_KEY, view.MAX_TABLES_KEY, view.STATE_TTL_KEY, view.BATCH_SIZE_KEY) == (
        "multi-join.enabled", "multi-join.max-tables", "multi-join.state-ttl",
        "multi-join.batch-size")
    tree = ast.parse(CONF_VIEW.render(DESCRIPTION))
    config = next(node for node in tree.body
                  if isinstance(node, ast.ClassDef) and node.name == "MultiJoinConfig")
    getters = {node.name: ast.unparse(node.returns) for node in config.body
               if isinstance(node, ast.FunctionDef) and node.decorator_list
               and ast.unparse(node.decorator_list[0]) == "property"}
    assert getters == {"enabled": "bool", "max_tables": "int | None", "state_ttl": "str | None",
                       "batch_size": "int"}
    assert view.MultiJoinConfig.state_ttl.__doc__.startswith(
        "How long a multi-join keeps an input row: a duration ('1 day', \"90 minutes\").")
    assert "None where unset" in view.MultiJoinConfig.max_tables.__doc__
    assert "None" not in view.MultiJoinConfig.enabled.__doc__


def test_reads_defaults_and_values_as_their_types(view):
    spark = FakeSpark()
    config = view.multi_join(spark)
    assert (config.enabled, config.max_tables, config.state_ttl, config.batch_size) == (
        False, None, None, 100)
    spark.conf.values.update({"multi-join.enabled": " TRUE ", "multi-join.max-tables": "4",
                              "multi-join.state-ttl": "1d", "multi-join.batch-size": "7"})
    assert (config.enabled, config.max_tables, config.state_ttl, config.batch_size) == (
        True, 4, "1d", 7)
    spark.conf.values["multi-join.max-tables"] = "<undefined>"
    assert config.max_tables is None


def test_sets_and_unsets(view):
    spark = FakeSpark()
    config = view.multi_join(spark)
    config.enabled, config.max_tables, config.state_ttl = True, 3, "2h"
    assert spark.conf.values == {"multi-join.enabled": "true", "multi-join.max-tables": "3",
                                 "multi-join.state-ttl": "2h"}
    config.max_tables = config.state_ttl = None
    assert spark.conf.values == {"multi-join.enabled": "true"}


@pytest.mark.parametrize("attribute, value, message", [
    ("enabled", "yes", "multi-join.enabled takes True or False, not 'yes'"),
    ("enabled", None, "multi-join.enabled takes True or False, not None"),
    ("max_tables", 2.5, "multi-join.max-tables takes an integer of at least 3 or None, not 2.5"),
    ("max_tables", True, "multi-join.max-tables takes an integer of at least 3 or None, not True"),
    ("state_ttl", 3600, f"multi-join.state-ttl takes {TTL_WORDS}, or None, not 3600"),
    ("batch_size", None, "multi-join.batch-size takes a positive integer, not None"),
])
def test_a_value_of_another_type_is_a_type_error_naming_the_key(view, attribute, value, message):
    spark = FakeSpark()
    with pytest.raises(TypeError) as error:
        setattr(view.multi_join(spark), attribute, value)
    assert str(error.value) == message
    assert spark.conf.values == {}


def test_the_module_keeps_to_the_house_width():
    assert max(len(line) for line in CONF_VIEW.render(DESCRIPTION).splitlines()) <= 100


@pytest.mark.parametrize("entry, problem", [
    ({"key": "spark.sql.other", "type": "int"}, "starts with 'multi-join.'"),
    ({"key": "multi-join.9lives", "type": "int"}, "no Python name"),
    ({"key": "multi-join.ratio", "type": "double", "doc": "", "default": "1.0"}, "no Python type"),
])
def test_an_entry_without_a_python_form_fails_the_build(entry, problem):
    with pytest.raises(ValueError, match=problem):
        CONF_VIEW.render({"entries": [entry]})


def test_the_view_is_in_the_installed_package_and_not_in_the_tree():
    installed = Path(spark_multijoin.__file__).parent / CONF_VIEW.MODULE
    assert installed.is_file(), "the installed package lacks its generated settings view"
    assert f"python/spark_multijoin/{CONF_VIEW.MODULE}" in (ROOT / ".gitignore").read_text()
