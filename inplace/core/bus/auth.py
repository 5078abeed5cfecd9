"""How this process's Kafka clients authenticate (issue 17's `secure` profile).

Local mode needs nothing: PLAINTEXT on loopback. The secure profile gives every role its own
SASL/SCRAM principal (and TLS with SASL_SSL), read once per process from the environment, as
librdkafka reads its configuration, so every producer, consumer and admin client of a role is
the same principal and no call site passes credentials around:

    INPLACE_KAFKA_SECURITY_PROTOCOL   PLAINTEXT (default) | SASL_PLAINTEXT | SASL_SSL
    INPLACE_KAFKA_SASL_MECHANISM      SCRAM-SHA-512 (default) | SCRAM-SHA-256 | PLAIN
    INPLACE_KAFKA_USERNAME            the role's principal, e.g. kubelet
    INPLACE_KAFKA_PASSWORD_FILE       a file holding the password (kept out of `docker inspect`)
    INPLACE_KAFKA_PASSWORD            or the password itself (tests, quick experiments)
    INPLACE_KAFKA_CA_FILE             the broker's CA for SASL_SSL

What each principal may do on the log is `inplace/core/bus/access.py`.
"""

from __future__ import annotations

import functools
import ssl
from pathlib import Path
from typing import Any, Literal

from pydantic import SecretStr, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

__all__ = ["KafkaAuth", "aiokafka_options", "kafka_auth"]

Protocol = Literal["PLAINTEXT", "SASL_PLAINTEXT", "SASL_SSL"]
Mechanism = Literal["SCRAM-SHA-512", "SCRAM-SHA-256", "PLAIN"]


class KafkaAuth(BaseSettings):
    """The Kafka credentials of this process (INPLACE_KAFKA_* environment variables)."""

    model_config = SettingsConfigDict(env_prefix="INPLACE_KAFKA_", extra="ignore")

    security_protocol: Protocol = "PLAINTEXT"
    sasl_mechanism: Mechanism = "SCRAM-SHA-512"
    username: str = ""
    password: SecretStr = SecretStr("")
    password_file: Path | None = None
    ca_file: Path | None = None

    @model_validator(mode="after")
    def _complete(self) -> KafkaAuth:
        if self.password_file is not None and not self.password.get_secret_value():
            try:
                secret = self.password_file.read_text().strip()
            except OSError as exc:
                raise ValueError(f"INPLACE_KAFKA_PASSWORD_FILE: {exc.strerror}") from None
            self.password = SecretStr(secret)
        if self.security_protocol != "PLAINTEXT" and not (
            self.username and self.password.get_secret_value()
        ):
            raise ValueError(
                f"INPLACE_KAFKA_SECURITY_PROTOCOL={self.security_protocol} needs "
                "INPLACE_KAFKA_USERNAME and INPLACE_KAFKA_PASSWORD_FILE (or _PASSWORD)"
            )
        return self

    @property
    def sasl(self) -> bool:
        return self.security_protocol != "PLAINTEXT"

    def _sasl_options(self) -> dict[str, Any]:
        # aiokafka and kafka-python name these four the same way.
        return {
            "security_protocol": self.security_protocol,
            "sasl_mechanism": self.sasl_mechanism,
            "sasl_plain_username": self.username,
            "sasl_plain_password": self.password.get_secret_value(),
        }

    def aiokafka(self) -> dict[str, Any]:
        """Keyword arguments for aiokafka's producer, consumer and admin client."""
        if not self.sasl:
            return {}
        options = self._sasl_options()
        if self.security_protocol == "SASL_SSL":
            options["ssl_context"] = ssl.create_default_context(
                cafile=str(self.ca_file) if self.ca_file else None
            )
        return options

    def kafka_python(self) -> dict[str, Any]:
        """The same credentials as kafka-python's admin client takes them."""
        if not self.sasl:
            return {}
        options = self._sasl_options()
        if self.ca_file is not None:
            options["ssl_cafile"] = str(self.ca_file)
        return options


@functools.cache
def kafka_auth() -> KafkaAuth:
    """This process's credentials, read once (a role's clients all share one principal)."""
    return KafkaAuth()


def aiokafka_options() -> dict[str, Any]:
    return kafka_auth().aiokafka()
