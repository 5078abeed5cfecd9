"""docker-compose.yml agrees with the code: roles, CLI, ports, settings and start-up order.

The file is loaded by compose-check (../shared/tools/compose-check), which uses compose-go, the
loader of Docker Compose v2 itself, so no Docker engine is needed. Its normalized output (anchors
merged, ports and depends_on in long form) is what the tests below inspect.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import typer.main
import yaml
from pydantic import AliasChoices
from pydantic_settings import BaseSettings
from typer.core import TyperGroup

from inplace.cli.main import app
from inplace.cli.roles import ROLES
from inplace.core.settings import DEFAULT_PORTS, Settings
from services.apiserver.config import ApiserverConfig
from services.hotplug.config import HotplugConfig
from services.kubelet.config import KubeletConfig
from services.workload.config import WorkloadConfig

REPO = Path(__file__).resolve().parents[2]
COMPOSE_FILE = REPO / "docker-compose.yml"
CHECKER_SRC = REPO.parent / "shared" / "tools" / "compose-check"
CHECKER_BIN = Path.home() / ".cache" / "inplace" / "compose-check"

ROLE_NAMES = sorted(ROLES)
ENV_PREFIX: str = Settings.model_config.get("env_prefix", "")
COMPLETED = "service_completed_successfully"
HEALTHY = "service_healthy"

Service = dict[str, Any]


# --- the checker -------------------------------------------------------------------------------


def _find_go() -> str | None:
    fallback = Path("/usr/local/go/bin/go")  # the official tarball's place, often not on PATH
    return shutil.which("go") or (str(fallback) if fallback.is_file() else None)


def _checker_is_fresh() -> bool:
    if not CHECKER_BIN.is_file():
        return False
    built = CHECKER_BIN.stat().st_mtime
    sources = [CHECKER_SRC / name for name in ("main.go", "go.mod", "go.sum")]
    return all(src.stat().st_mtime <= built for src in sources if src.exists())


@pytest.fixture(scope="session")
def compose_check() -> Path:
    """The compose-check binary, built once into ~/.cache/inplace (again if its source changed)."""
    if not (CHECKER_SRC / "main.go").is_file():
        pytest.fail(f"compose-check sources not found at {CHECKER_SRC} (expected <repo>/../shared)")
    if _checker_is_fresh():
        return CHECKER_BIN
    go = _find_go()
    if go is None:
        pytest.fail(
            "`go` is not on PATH, so compose-check cannot be built. Install Go "
            "(https://go.dev/dl/) or build it by hand: "
            f"cd {CHECKER_SRC} && go build -o {CHECKER_BIN} ."
        )
    CHECKER_BIN.parent.mkdir(parents=True, exist_ok=True)
    partial = CHECKER_BIN.with_name(f"{CHECKER_BIN.name}.{os.getpid()}.tmp")
    build = subprocess.run(
        [go, "build", "-o", str(partial), "."],
        cwd=CHECKER_SRC,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if build.returncode != 0:
        partial.unlink(missing_ok=True)
        pytest.fail(f"building compose-check failed:\n{build.stderr}")
    partial.replace(CHECKER_BIN)  # atomic, so concurrent sessions never run half a binary
    return CHECKER_BIN


def run_checker(checker: Path, compose_file: Path) -> subprocess.CompletedProcess[str]:
    # A minimal environment: ${VAR:-default} interpolation must not depend on the caller's shell.
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(Path.home())}
    return subprocess.run(
        [str(checker), compose_file.name],
        cwd=compose_file.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.fixture(scope="session")
def services(compose_check: Path) -> dict[str, Service]:
    """docker-compose.yml's services as Docker Compose v2 normalizes them."""
    result = run_checker(compose_check, COMPOSE_FILE)
    if result.returncode != 0:
        pytest.fail(f"compose-check rejected docker-compose.yml:\n{result.stderr}")
    project = yaml.safe_load(result.stdout)
    return project["services"]


# --- helpers -----------------------------------------------------------------------------------


def uses_our_image(service: Service) -> bool:
    build = service.get("build") or {}
    return Path(build.get("context", "/nonexistent")) == REPO and (
        build.get("dockerfile") == "Dockerfile"
    )


def inplace_invocations(command: Sequence[str]) -> list[list[str]]:
    """The `inplace` argument lists a service's command runs: `inplace ARGS` or
    `sh -c "inplace A && inplace B"`."""
    if command[:1] == ["inplace"]:
        return [list(command[1:])]
    if len(command) == 3 and command[:2] == ["sh", "-c"]:
        steps = [shlex.split(step) for step in command[2].split("&&")]
        assert all(step[:1] == ["inplace"] for step in steps), f"non-inplace step in {command}"
        return [step[1:] for step in steps]
    raise AssertionError(f"not an `inplace` command: {command}")


def parse_cli(args: Sequence[str]) -> tuple[str, dict[str, Any]]:
    """Parse `inplace ARGS` with the real command tree (typer's click), without running anything.

    Unknown commands or options, missing arguments and badly typed values raise usage errors.
    Returns the command path (e.g. "serve") and its parsed parameters.
    """
    command: Any = typer.main.get_command(app)
    ctx = command.context_class(command, info_name="inplace")
    path: list[str] = []
    rest = list(args)
    while isinstance(command, TyperGroup):
        assert rest, f"`inplace {' '.join(path)}` needs a subcommand"
        name = rest.pop(0)
        sub = command.get_command(ctx, name)
        assert sub is not None, f"`inplace {' '.join([*path, name])}` is not a command"
        path.append(name)
        command = sub
        if isinstance(command, TyperGroup):
            ctx = command.context_class(command, info_name=name, parent=ctx)
    parsed = command.make_context(path[-1], rest, parent=ctx)
    return " ".join(path), parsed.params


def conditions(service: Service) -> dict[str, str]:
    return {name: dep["condition"] for name, dep in (service.get("depends_on") or {}).items()}


def settings_field(env_var: str) -> str:
    """INPLACE_KAFKA_BOOTSTRAP -> kafka_bootstrap."""
    return env_var.removeprefix(ENV_PREFIX).lower()


def role_setting(env_var: str) -> tuple[type[BaseSettings], str] | None:
    """(settings class, field) an INPLACE_* variable sets: a role's own settings class
    (INPLACE_APISERVER_*, INPLACE_HOTPLUG_*, INPLACE_KUBELET_*, INPLACE_WORKLOAD_*) before the
    shared Settings."""
    for config in (ApiserverConfig, HotplugConfig, KubeletConfig, WorkloadConfig, Settings):
        for name, info in config.model_fields.items():
            alias = info.validation_alias
            if isinstance(alias, AliasChoices) and env_var in alias.choices:
                return config, name  # a setting read under a name without the role prefix
        prefix = config.model_config.get("env_prefix", "")
        field = env_var.removeprefix(prefix).lower()
        if env_var.startswith(prefix) and field in config.model_fields:
            return config, field
    return None


def inplace_env(service: Service) -> dict[str, str]:
    env = service.get("environment") or {}
    return {key: value for key, value in env.items() if key.startswith(ENV_PREFIX)}


# --- the file as a whole -----------------------------------------------------------------------


def test_the_inplace_executable_is_this_cli() -> None:
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["inplace"] == "inplace.cli.main:main"


def test_all_our_services_share_one_image(services: dict[str, Service]) -> None:
    ours = {name: svc for name, svc in services.items() if uses_our_image(svc)}
    assert set(ours) == {*ROLES, "init"}
    assert len({svc["image"] for svc in ours.values()}) == 1, "one image for every role"


def test_every_service_package_has_a_compose_service(services: dict[str, Service]) -> None:
    packages = {path.parent.name for path in (REPO / "services").glob("*/service.py")}
    assert packages, "no services/*/service.py found"
    assert packages <= set(services), f"missing in compose: {sorted(packages - set(services))}"


def test_every_command_of_our_image_is_accepted_by_the_cli(services: dict[str, Service]) -> None:
    for name, svc in services.items():
        if not uses_our_image(svc):
            continue
        for args in inplace_invocations(svc["command"]):
            command, params = parse_cli(args)
            if command == "serve":
                assert params["role"] in ROLES, f"{name}: unknown role {params['role']!r}"


@pytest.mark.parametrize("name", sorted([*ROLES, "init"]))
def test_inplace_env_vars_are_settings(
    name: str, services: dict[str, Service], monkeypatch: pytest.MonkeyPatch
) -> None:
    env = inplace_env(services[name])
    assert env, f"{name} sets no {ENV_PREFIX}* variables"
    unknown = {key for key in env if role_setting(key) is None}
    assert not unknown, f"{name}: not settings fields: {sorted(unknown)}"

    for key in list(os.environ):
        if key.startswith(ENV_PREFIX):
            monkeypatch.delenv(key)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    for key, value in env.items():
        found = role_setting(key)
        assert found is not None
        config, field = found
        assert str(getattr(config(), field)) == value


# --- one row per role --------------------------------------------------------------------------


@pytest.mark.parametrize("role", ROLE_NAMES)
def test_role_runs_inplace_serve_on_its_port(role: str, services: dict[str, Service]) -> None:
    assert role in services, f"no compose service for role {role}"
    svc = services[role]
    assert uses_our_image(svc)
    [args] = inplace_invocations(svc["command"])
    command, params = parse_cli(args)
    assert command == "serve"
    assert params == {"role": role, "host": "0.0.0.0", "port": DEFAULT_PORTS[role]}
    assert svc["restart"] == "unless-stopped"


@pytest.mark.parametrize("role", ROLE_NAMES)
def test_role_healthcheck_and_ports_use_its_port(role: str, services: dict[str, Service]) -> None:
    svc, port = services[role], DEFAULT_PORTS[role]
    test = svc["healthcheck"]["test"]
    assert test[:3] == ["CMD", "python", "-c"], "the image has python, not curl"
    compile(test[3], f"<{role} healthcheck>", "exec")
    scheme = "https" if role == "apiserver" else "http"  # the API serves TLS only
    assert re.findall(r"https?://[^'\"\s]+", test[3]) == [f"{scheme}://127.0.0.1:{port}/healthz"]
    for published in svc.get("ports") or []:
        assert published.get("host_ip") == "127.0.0.1", "publish on loopback only"
        assert published["target"] == port
        # The first host port is the role's; a range lets `--scale` give each replica one.
        assert int(str(published["published"]).split("-")[0]) == port


@pytest.mark.parametrize("role", ["kubelet", "workload", "scheduler"])
def test_a_role_sharing_its_work_in_a_group_scales_out(
    role: str, services: dict[str, Service]
) -> None:
    """`--scale kubelet=3` (or workload) needs a host port per replica, and no fixed member
    name (each container's hostname is its static member name in the role's group)."""
    (published,) = services[role]["ports"]
    first, last = (int(p) for p in str(published["published"]).split("-"))
    assert last - first + 1 >= 3
    assert f"INPLACE_{role.upper()}_INSTANCE" not in (services[role].get("environment") or {})


@pytest.mark.parametrize("role", ROLE_NAMES)
def test_role_starts_after_init(role: str, services: dict[str, Service]) -> None:
    assert conditions(services[role])["init"] == COMPLETED


def test_apiserver_is_published_and_finds_quota(services: dict[str, Service]) -> None:
    apiserver = services["apiserver"]
    assert [p["target"] for p in apiserver["ports"]] == [DEFAULT_PORTS["apiserver"]]
    assert apiserver["environment"]["INPLACE_QUOTA_URL"] == f"http://quota:{DEFAULT_PORTS['quota']}"
    assert conditions(apiserver).get("quota") == HEALTHY


# --- init and the infrastructure ---------------------------------------------------------------


def test_init_creates_topics_then_migrates_once_infra_is_healthy(
    services: dict[str, Service],
) -> None:
    init = services["init"]
    invoked = [parse_cli(args) for args in inplace_invocations(init["command"])]
    assert [command for command, _ in invoked] == ["topics", "migrate", "pki init"]
    pki = invoked[2][1]
    assert pki["directory"] == Path("/pki") and "apiserver" in pki["host"]
    assert {"source": "pki", "target": "/pki", "type": "volume"}.items() <= next(
        v for v in init["volumes"] if v["target"] == "/pki"
    ).items()
    assert conditions(init) == {"kafka": HEALTHY, "postgres": HEALTHY}
    assert init.get("restart", "no") == "no", "a one-shot job must not be restarted"


def test_kafka_is_the_official_image_in_kraft_mode(services: dict[str, Service]) -> None:
    kafka = services["kafka"]
    env = kafka["environment"]
    assert kafka["image"] == "apache/kafka:3.9.1"
    assert "build" not in kafka
    assert env["KAFKA_PROCESS_ROLES"] == "broker,controller"
    assert env["KAFKA_AUTO_CREATE_TOPICS_ENABLE"] == "false"
    assert env["KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR"] == "1"
    assert env["KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR"] == "1"
    assert "/opt/kafka/bin/" in " ".join(kafka["healthcheck"]["test"])
    assert [v["type"] for v in kafka["volumes"]] == ["volume"]
    # Every role's bootstrap server is a listener the broker advertises in the network.
    advertised = {url.split("://", 1)[1] for url in env["KAFKA_ADVERTISED_LISTENERS"].split(",")}
    for role in ROLE_NAMES:
        bootstrap = services[role]["environment"]["INPLACE_KAFKA_BOOTSTRAP"]
        assert set(bootstrap.split(",")) <= advertised


def test_postgres_is_the_official_image(services: dict[str, Service]) -> None:
    postgres = services["postgres"]
    env = postgres["environment"]
    assert postgres["image"] == "postgres:15"
    assert "build" not in postgres
    assert env["POSTGRES_HOST_AUTH_METHOD"] == "trust"
    assert "pg_isready" in " ".join(postgres["healthcheck"]["test"])
    assert [v["type"] for v in postgres["volumes"]] == ["volume"]
    # Every role's DSN points at this service and its database.
    for role in ROLE_NAMES:
        dsn = services[role]["environment"]["INPLACE_POSTGRES_DSN"]
        assert re.fullmatch(rf"postgresql://\w+@postgres:5432/{env['POSTGRES_DB']}", dsn), dsn


# --- the checker really checks -----------------------------------------------------------------


def test_checker_rejects_depends_on_an_undefined_service(
    compose_check: Path, tmp_path: Path
) -> None:
    original = yaml.safe_load(COMPOSE_FILE.read_text())

    control = tmp_path / "control" / "docker-compose.yml"
    control.parent.mkdir()
    control.write_text(yaml.safe_dump(original, sort_keys=False))
    assert run_checker(compose_check, control).returncode == 0, "the unmodified copy must load"

    original["services"]["apiserver"]["depends_on"]["no-such-service"] = {
        "condition": "service_started"
    }
    broken = tmp_path / "broken" / "docker-compose.yml"
    broken.parent.mkdir()
    broken.write_text(yaml.safe_dump(original, sort_keys=False))
    result = run_checker(compose_check, broken)
    assert result.returncode != 0
    assert "no-such-service" in result.stderr


# --- profile `secure` (issue 17) -----------------------------------------------------------------


@pytest.fixture(scope="session")
def secure_services(
    compose_check: Path, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Service]:
    """The file with the `secure` profile active: the checker loads the default profile only,
    so a copy without `profiles` keys makes it validate every secure service and reference."""
    original = yaml.safe_load(COMPOSE_FILE.read_text())
    for service in original["services"].values():
        service.pop("profiles", None)
    copy = tmp_path_factory.mktemp("secure") / "docker-compose.yml"
    copy.write_text(yaml.safe_dump(original, sort_keys=False))
    result = run_checker(compose_check, copy)
    assert result.returncode == 0, f"compose-check rejected the secure profile:\n{result.stderr}"
    services: dict[str, Service] = yaml.safe_load(result.stdout)["services"]
    return services


def test_secure_profile_is_off_by_default(services: dict[str, Service]) -> None:
    assert not any(name.endswith("-secure") or name == "secrets" for name in services)
    profiles = {
        name: svc.get("profiles")
        for name, svc in yaml.safe_load(COMPOSE_FILE.read_text())["services"].items()
    }
    secure = {name for name, p in profiles.items() if p == ["secure"]}
    assert secure == {"secrets", "kafka-secure", "postgres-secure", "init-secure"} | {
        f"{role}-secure" for role in ROLES
    }


@pytest.mark.parametrize("role", ROLE_NAMES)
def test_secure_role_is_its_own_principal_on_log_and_database(
    role: str, secure_services: dict[str, Service], monkeypatch: pytest.MonkeyPatch
) -> None:
    from inplace.core.bus.access import ROLE_WRITES
    from inplace.core.bus.auth import KafkaAuth
    from inplace.core.store.roles import READERS, WRITERS, db_role

    svc = secure_services[f"{role}-secure"]
    env = svc["environment"]
    assert env["INPLACE_KAFKA_BOOTSTRAP"] == "kafka-secure:9092"
    assert env["INPLACE_KAFKA_SECURITY_PROTOCOL"] == "SASL_PLAINTEXT"
    assert role in ROLE_WRITES and role in (*WRITERS, *READERS)
    # The names `inplace kafka provision` / `inplace postgres provision` write.
    assert env["INPLACE_KAFKA_USERNAME"] == role
    assert env["INPLACE_KAFKA_PASSWORD_FILE"] == f"/secrets/{role}.kafka-password"
    assert (
        env["INPLACE_POSTGRES_DSN"] == f"postgresql://{db_role(role)}@postgres-secure:5432/inplace"
    )
    assert env["PGPASSFILE"] == f"/secrets/{role}.pgpass"
    assert not any("PASSWORD" in key and not key.endswith("_FILE") for key in env), (
        "no secret inline"
    )
    assert {v["source"] for v in svc["volumes"]} == {"pki", "secrets"}
    assert all(v.get("read_only") for v in svc["volumes"])
    assert conditions(svc)["init-secure"] == COMPLETED
    # Every INPLACE_* variable is a setting (Settings, a role's config, or KafkaAuth).
    for key in env:
        if not key.startswith(ENV_PREFIX):
            continue
        if key.startswith("INPLACE_KAFKA_") and key != "INPLACE_KAFKA_BOOTSTRAP":
            field = key.removeprefix("INPLACE_KAFKA_").lower()
            assert field in KafkaAuth.model_fields, key
            continue
        assert role_setting(key) is not None, key


def test_secure_init_provisions_as_the_admins(secure_services: dict[str, Service]) -> None:
    init = secure_services["init-secure"]
    steps = [" ".join(args[:2]) for args in inplace_invocations(init["command"])]
    assert steps == ["topics", "migrate", "kafka provision", "postgres provision", "pki init"]
    for args in inplace_invocations(init["command"]):
        parse_cli(args)  # every step is a command the CLI accepts
    env = init["environment"]
    assert (env["INPLACE_KAFKA_USERNAME"], env["INPLACE_KAFKA_SASL_MECHANISM"]) == (
        "admin",
        "PLAIN",
    )
    assert conditions(init) == {"kafka-secure": HEALTHY, "postgres-secure": HEALTHY}
    kafka = secure_services["kafka-secure"]["environment"]
    assert kafka["KAFKA_ALLOW_EVERYONE_IF_NO_ACL_FOUND"] == "false"
    assert "PLAINTEXT://" not in kafka["KAFKA_ADVERTISED_LISTENERS"].replace("SASL_PLAINTEXT", "")
    secrets = secure_services["secrets"]
    assert inplace_invocations(secrets["command"]) == [["secrets", "init", "--dir", "/secrets"]]
