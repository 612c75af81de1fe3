"""bamql.config: the one validated Config, the BAMQL_* variables, sizes and the enums."""

from __future__ import annotations

import inspect
import json
import re
from pathlib import Path

import pytest

import bamql
from bamql import config
from bamql.config import (
    AccessPath,
    Backend,
    Compression,
    Config,
    DaskDispatch,
    Device,
    FloatEncoding,
    Medium,
    Role,
    parse_size,
)
from bamql.errors import ConfigError, DeviceError, IngestError, PlanError, UsageError

PACKAGE = Path(bamql.__file__).resolve().parent


@pytest.fixture
def clean_env(monkeypatch):
    """No BAMQL_* variable (nor XDG_CACHE_HOME, XDG_DATA_HOME) set: the defaults show."""
    for var in (*config.ENV_VARS.values(), "XDG_CACHE_HOME", "XDG_DATA_HOME"):
        monkeypatch.delenv(var, raising=False)
    return monkeypatch


def _one_line(e: pytest.ExceptionInfo) -> str:
    text = str(e.value)
    assert "\n" not in text and text
    return text


# -- sizes ---------------------------------------------------------------------------------
@pytest.mark.parametrize("text,want", [
    ("8GiB", 8 * 2**30), ("8GB", 8 * 10**9), ("8G", 8 * 10**9), ("8gb", 8 * 10**9),
    ("8 GiB", 8 * 2**30), ("1.5GiB", 3 * 2**29), ("512", 512), ("512B", 512), ("0", 0),
    ("4KiB", 4096), ("4KB", 4000), ("4k", 4000), ("64MiB", 64 << 20), ("2MB", 2_000_000),
    ("1TiB", 2**40), ("1TB", 10**12), ("4.35KB", 4350), (".5KiB", 512), ("8gigabytes", 8 * 10**9),
    (4096, 4096), (0, 0),
])
def test_sizes_read_as_duckdb_reads_them(text, want):
    # KB/MB/GB/TB and K/M/G/T are powers of 1000, KiB/MiB/GiB/TiB of 1024, a number is bytes
    assert parse_size(text) == want


@pytest.mark.parametrize("bad", ["lots", "8 PB", "8GiBs", "-1", "1e9", "", "GiB", "8 Gi", "1.2.3",
                                 -1, True, 1.5, None, b"8GiB"])
def test_a_bad_size_is_one_line_naming_its_setting(bad):
    with pytest.raises(ConfigError, match=r"^cache: not a size: ") as e:
        parse_size(bad, "cache")
    _one_line(e)
    with pytest.raises(PlanError, match=r"^not a size: "):
        parse_size(bad, None, PlanError)


def test_cache_and_page_size_are_checked_as_sizes():
    assert Config(cache="8GB").cache == 8 * 10**9
    assert Config(cache="8GiB").cache == 8 * 2**30
    assert Config(page_size="4KiB").page_size == 4096
    with pytest.raises(DeviceError, match=r"^cache: not a size: 'lots'"):
        Config(cache="lots")
    with pytest.raises(PlanError, match=r"^page_size: not a size: '4Q'"):
        Config(page_size="4Q")


# -- names ---------------------------------------------------------------------------------
@pytest.mark.parametrize("kind,typo,error,text", [
    (Device, "gpus", DeviceError, "device must be one of auto, cpu, gpu, not 'gpus'"),
    (Backend, "hots", DeviceError, "backend must be one of host, gpu, file, not 'hots'"),
    (Medium, "disk", DeviceError, "medium must be one of file, queue, nvcomp, cached, host, gpu, not 'disk'"),
    (AccessPath, "gaher", ConfigError, "access path must be one of scan, gather, stream, direct, "
                                       "cache, not 'gaher'"),
    (Role, "predicat", ConfigError, "role must be one of predicate, dependent, not 'predicat'"),
    (Backend, "HOST", DeviceError, "backend must be one of host, gpu, file, not 'HOST'"),
    (Device, None, DeviceError, "device must be one of auto, cpu, gpu, not None"),
    (FloatEncoding, "decimal", IngestError, "--floats must be one of auto, plain, decimals, "
                                            "not 'decimal'"),
    (Compression, "lz4", IngestError, "--compress must be one of zstd, none, not 'lz4'"),
])
def test_a_typo_in_a_name_is_one_clean_error_listing_the_choices(kind, typo, error, text):
    with pytest.raises(error) as e:
        kind(typo)
    assert _one_line(e) == text


def test_names_are_their_strings():
    # comparisons, dict keys, formatting and JSON keep working byte for byte
    assert Backend("file") is Backend.FILE and Backend(Backend.FILE) is Backend.FILE
    assert Backend.FILE == "file" and "gather" == AccessPath.GATHER
    assert {"queue": 1}[Medium.QUEUE] == 1
    assert f"{Role.PREDICATE:<10}|{AccessPath.SCAN}" == "predicate |scan"
    assert json.dumps({Device.GPU: [Backend.HOST, Medium.CACHED]}) == '{"gpu": ["host", "cached"]}'
    assert str(AccessPath.STREAM) == "stream"
    assert json.dumps([FloatEncoding.DECIMALS, Compression.ZSTD]) == '["decimals", "zstd"]'


def test_the_cost_model_media_are_the_medium_names():
    from bamql.physical.cost import MEDIA
    from bamql.physical.cost import Medium as Figures

    assert list(MEDIA) == list(Medium) and all(isinstance(k, Medium) for k in MEDIA)
    assert Figures("file", 1.0, 1.0).name is Medium.FILE
    with pytest.raises(DeviceError, match="medium must be one of"):
        Figures("flie", 1.0, 1.0)


def test_plans_use_the_enums(taxi_store):
    from bamql.physical.planning import DISK_MEDIA

    assert DISK_MEDIA == (Medium.FILE, Medium.QUEUE, Medium.NVCOMP)
    with bamql.connect(taxi_store, device="cpu") as con:
        plan = con.plan(con._translate(
            "SELECT AVG(fare_amount) FROM trips WHERE passenger_count = 3"))
        assert plan.medium is Medium.FILE
        assert {type(a.path) for a in plan.access} == {AccessPath}
        assert {a.role for a in plan.access} == {Role.PREDICATE, Role.DEPENDENT}
        assert con.device is Device.CPU and con.backend is Backend.FILE
        res = con.sql("EXPLAIN ANALYZE SELECT AVG(fare_amount) FROM trips WHERE passenger_count = 3")
        assert "medium: file" in res.plan_text
        cols = res.stats.to_dict()["columns"]
        assert json.loads(json.dumps(cols))["passenger_count"]["role"] == "predicate"


# -- the Config ----------------------------------------------------------------------------
def test_defaults(clean_env):
    c = Config.from_env()
    assert c == Config()
    assert (c.device, c.backend, c.cache, c.medium, c.page_size, c.cluster) == (
        Device.AUTO, None, None, None, None, None)
    assert c.cache_dir == Path.home() / ".cache" / "bamql"
    assert c.history == Path.home() / ".local" / "share" / "bamql" / "history"
    assert (c.gpu_prepared, c.debug) == (True, False)
    assert c.dask_dispatch is DaskDispatch.ACTOR


def test_settings_are_normalized_and_frozen():
    c = Config(device="gpu", backend="file", medium="queue", cache=4096, page_size="512",
               cache_dir="/tmp/x", history="~/h", gpu_prepared="off", debug="yes")
    assert c.device is Device.GPU and c.backend is Backend.FILE and c.medium is Medium.QUEUE
    assert (c.cache, c.page_size, c.gpu_prepared, c.debug) == (4096, 512, False, True)
    assert c.cache_dir == Path("/tmp/x") and c.history == Path.home() / "h"
    with pytest.raises(AttributeError):
        c.device = Device.CPU  # type: ignore[misc]
    assert Config(device="cpu") == Config(device=Device.CPU)


@pytest.mark.parametrize("setting,bad,error,text", [
    ("device", "tpu", DeviceError, "device must be one of auto, cpu, gpu, not 'tpu'"),
    ("backend", "tape", DeviceError, "backend must be one of host, gpu, file, not 'tape'"),
    ("medium", "ssd", DeviceError, "medium must be one of file, queue, nvcomp, cached, host, gpu, not 'ssd'"),
    ("cache", "8 GiBs", DeviceError, "cache: not a size: '8 GiBs'"),
    ("cache", -5, DeviceError, "cache: not a size: -5"),
    ("page_size", "lots", PlanError, "page_size: not a size: 'lots'"),
    ("gpu_prepared", "maybe", ConfigError, "gpu_prepared takes 1 or 0"),
    ("debug", 2, ConfigError, "debug takes 1 or 0 (true/false, yes/no, on/off), not 2"),
    ("cache_dir", "", ConfigError, "cache_dir takes a path, not ''"),
    ("history", 3, ConfigError, "history takes a path, not 3"),
    ("dask_dispatch", "rpc", ConfigError, "dask_dispatch takes actor or task, not 'rpc'"),
])
def test_every_setting_is_checked(setting, bad, error, text):
    for build in (lambda: Config(**{setting: bad}), lambda: Config.from_env(**{setting: bad})):
        with pytest.raises(error) as e:
            build()
        assert _one_line(e).startswith(text)


def test_an_unknown_setting_is_a_usage_error():
    with pytest.raises(UsageError, match="unknown setting.*devcie.*settings: device, backend"):
        Config.from_env(devcie="cpu")


# -- the environment -----------------------------------------------------------------------
@pytest.mark.parametrize("var,value,setting,want", [
    ("BAMQL_CACHE_DIR", "/tmp/bq", "cache_dir", Path("/tmp/bq")),
    ("BAMQL_GPU_PREPARED", "0", "gpu_prepared", False),
    ("BAMQL_GPU_PREPARED", "1", "gpu_prepared", True),
    ("BAMQL_DEBUG", "1", "debug", True),
    ("BAMQL_DEBUG", "TRUE", "debug", True),
    ("BAMQL_DEBUG", "0", "debug", False),
    ("BAMQL_DEBUG", "off", "debug", False),
    ("BAMQL_HISTORY", "/tmp/hist", "history", Path("/tmp/hist")),
    ("BAMQL_DASK_DISPATCH", "task", "dask_dispatch", DaskDispatch.TASK),
    ("BAMQL_DASK_DISPATCH", " Actor ", "dask_dispatch", DaskDispatch.ACTOR),
])
def test_variables_are_read_when_a_config_is_built(clean_env, var, value, setting, want):
    before = getattr(Config.from_env(), setting)
    clean_env.setenv(var, value)  # after bamql was imported: read now
    assert getattr(Config.from_env(), setting) == want
    assert getattr(Config.from_env(environ={}), setting) == before
    assert getattr(Config.from_env(environ={var: value}), setting) == want


@pytest.mark.parametrize("var,value,text", [
    ("BAMQL_GPU_PREPARED", "no way", "BAMQL_GPU_PREPARED takes 1 or 0"),
    ("BAMQL_DEBUG", "2", "BAMQL_DEBUG takes 1 or 0 (true/false, yes/no, on/off), not '2'"),
    ("BAMQL_DASK_DISPATCH", "scheduler", "BAMQL_DASK_DISPATCH takes actor or task, not 'scheduler'"),
])
def test_a_bad_variable_is_one_line_naming_the_variable(clean_env, var, value, text):
    clean_env.setenv(var, value)
    with pytest.raises(ConfigError) as e:
        Config.from_env()
    assert _one_line(e).startswith(text)


def test_keywords_win_over_variables_and_empty_variables_are_unset(clean_env):
    clean_env.setenv("BAMQL_GPU_PREPARED", "maybe")
    assert Config.from_env(gpu_prepared=False).gpu_prepared is False  # the variable is not read
    clean_env.setenv("BAMQL_GPU_PREPARED", "")
    clean_env.setenv("BAMQL_CACHE_DIR", "")
    assert Config.from_env() == Config()


def test_the_kernel_cache_dir_follows_xdg(clean_env, tmp_path):
    clean_env.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert Config.from_env().cache_dir == tmp_path / "bamql"
    clean_env.setenv("BAMQL_CACHE_DIR", str(tmp_path / "mine"))
    assert Config.from_env().cache_dir == tmp_path / "mine"


def test_the_shell_history_follows_xdg(clean_env, tmp_path):
    clean_env.setenv("XDG_DATA_HOME", str(tmp_path))
    assert Config.from_env().history == tmp_path / "bamql" / "history"
    clean_env.setenv("BAMQL_HISTORY", str(tmp_path / "mine"))
    assert Config.from_env().history == tmp_path / "mine"


def test_only_config_reads_bamql_variables():
    # any other module receives a Config (or builds one), so every variable is read,
    # checked and documented in one place
    reads = re.compile(r"""(os\.environ\s*\[\s*|os\.environ\.get\(\s*|os\.getenv\(\s*|"""
                       r"""environ\.get\(\s*)["']BAMQL_""")
    found = [f"{p.relative_to(PACKAGE.parent)}:{i}"
             for p in sorted(PACKAGE.rglob("*.py")) if p.name != "config.py" or p.parent != PACKAGE
             for i, line in enumerate(p.read_text().splitlines(), 1) if reads.search(line)]
    assert found == []


# -- where the Config is used --------------------------------------------------------------
def test_connect_keeps_its_signature():
    sig = inspect.signature(bamql.connect)
    assert [(p.name, p.default) for p in sig.parameters.values()] == [
        ("path", None), ("device", "auto"), ("backend", None), ("cache", None),
        ("medium", None), ("cluster", None), ("page_size", None), ("token", None),
        ("tls_root_certs", None), ("cache_files", None)]


def test_cache_files_comes_from_the_keyword_or_the_variable():
    assert Config().cache_files is False
    assert Config.from_env({"BAMQL_CACHE_FILES": "yes"}).cache_files is True
    assert Config.from_env({"BAMQL_CACHE_FILES": "1"}, cache_files=False).cache_files is False
    with pytest.raises(ConfigError, match="BAMQL_CACHE_FILES takes 1 or 0"):
        Config.from_env({"BAMQL_CACHE_FILES": "maybe"})


def test_connect_checks_every_setting(taxi_store):
    with pytest.raises(DeviceError, match="^device must be one of auto, cpu, gpu, not 'cpux'$"):
        bamql.connect(taxi_store, device="cpux")
    with pytest.raises(DeviceError, match="^medium must be one of"):
        bamql.connect(taxi_store, device="cpu", medium="cashed")
    with pytest.raises(DeviceError, match="^cache: not a size: '8 gigs'"):
        bamql.connect(taxi_store, device="cpu", cache="8 gigs")  # a typo is caught on the CPU too
    with bamql.connect(taxi_store, device="cpu", medium="cached", cache="8GB") as con:
        assert con.config.cache == 8 * 10**9 and con.config.medium is Medium.CACHED
        assert con._medium() is Medium.CACHED


def test_a_session_takes_a_config_or_keywords(taxi_store):
    from bamql.api.session import Session

    with Session(taxi_store, config=Config(device="cpu", medium="cached")) as s:
        assert s.device is Device.CPU and s._medium() is Medium.CACHED
    with pytest.raises(UsageError, match="as keywords or as config=, not both"):
        Session(taxi_store, device="cpu", config=Config())


def test_the_cli_reads_sizes_the_same_way():
    from bamql.cli.main import build_parser

    p = build_parser()
    for text, want in (("4KiB", 4096), ("4096", 4096), ("512", 512), ("1MiB", 1 << 20)):
        assert p.parse_args(["ingest", "a.orc", "--out", "x", "--page-size", text]).page_size == want
    assert p.parse_args(["ingest", "a.orc", "--out", "x", "--page-size", "4KB"]).page_size == 4000


@pytest.mark.parametrize("command", [["ingest", "a.orc", "--out", "x"], ["bench"]])
@pytest.mark.parametrize("option,bad,good,choices", [
    ("--floats", "decimals", FloatEncoding.PLAIN, "'auto', 'plain'"),
    ("--compress", "lz4", Compression.ZSTD, "'zstd', 'none'"),
])
def test_the_clis_floats_and_compress_are_the_enums_names(capsys, command, option, bad, good,
                                                          choices):
    from bamql.cli.main import build_parser

    p = build_parser()
    with pytest.raises(SystemExit):
        p.parse_args([*command, option, bad])
    err = capsys.readouterr().err
    assert err.splitlines()[-1].endswith(
        f"argument {option}: invalid choice: {bad!r} (choose from {choices})")
    value = getattr(p.parse_args([*command, option, good.value]), option[2:])
    assert type(good)(value) is good


def test_a_bad_variable_is_one_line_from_the_cli(clean_env, capsys, tmp_path):
    from bamql.cli.main import main

    clean_env.setenv("BAMQL_GPU_PREPARED", "sometimes")
    assert main(["verify", str(tmp_path / "none")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("bamql: error: BAMQL_GPU_PREPARED takes 1 or 0") and err.count("\n") == 1


def test_the_file_cache_is_under_the_cache_dir_unless_bamql_file_cache_names_one(tmp_path):
    from pathlib import Path

    from bamql.config import Config

    c = Config.from_env({"BAMQL_CACHE_DIR": str(tmp_path)})
    assert c.file_cache is None and c.file_cache_dir == tmp_path / "files"
    c = Config.from_env({"BAMQL_FILE_CACHE": "~/fc", "BAMQL_CACHE_DIR": str(tmp_path)})
    assert c.file_cache_dir == Path("~/fc").expanduser()
    assert Config(file_cache=tmp_path / "x").file_cache_dir == tmp_path / "x"
