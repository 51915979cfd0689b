"""Configuration from the environment (and an optional `.env`).

The variable names are a public contract: operators and deploy files use them. A bad
configuration fails at start-up with one message that lists every bad variable and what
it accepts (`ConfigError`).
"""

from __future__ import annotations

import importlib.util
import math
import re
from datetime import timedelta
from typing import Annotated, Any, Literal

from pydantic import (
    AliasChoices,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from bot.config_values import mask, parse_config_duration, show_setting
from bot.domain.budgets import OverBudget
from bot.domain.teams import (
    BUDGETS_ACCEPTED,
    TEAMS_ACCEPTED,
    Team,
    budgets_refusal,
    parse_budgets,
    parse_teams,
)
from bot.domain.watch import (
    SEARCHES_PER_WINDOW,
    WATCHES_PER_PERSON,
    WATCHES_TOTAL,
    WatchLimits,
)

_USER_ID = re.compile(r"[UW][A-Z0-9]{2,}")
_GROUP_ID = re.compile(r"S[A-Z0-9]{2,}")
_CHANNEL_ID = re.compile(r"[CGD][A-Z0-9]{2,}")
_REGION = re.compile(r"[a-z]{2}(-gov|-iso[a-z]?)?-[a-z]+-[0-9]{1,2}")


def _split(value: Any) -> Any:
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    return value


def _env(name: str, description: str, **kwargs: Any) -> Any:
    """A field read from exactly one environment variable, documented by `description`."""
    return Field(validation_alias=AliasChoices(name), description=description, **kwargs)


DurationList = Annotated[list[timedelta], NoDecode]
IdList = Annotated[list[str], NoDecode]
AccountMap = Annotated[dict[str, str], NoDecode]
TeamList = Annotated[tuple[Team, ...], NoDecode]
BudgetMap = Annotated[dict[str, float], NoDecode]
_ACCOUNT_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,31}")
_ROLE_ARN = re.compile(r"arn:aws[a-z-]*:iam::[0-9]{12}:role/[\w+=,.@/-]{1,512}")


class Settings(BaseSettings):
    """Every setting; `describe()` lists them for `gpu-bot config` and the README."""

    model_config = SettingsConfigDict(
        env_file=".env", env_file_encoding="utf-8", extra="ignore", populate_by_name=False
    )

    slack_bot_token: SecretStr | None = _env(
        "SLACK_BOT_TOKEN", "bot token, xoxb-… (needed by serve in Slack)", default=None
    )
    slack_signing_secret: SecretStr | None = _env(
        "SLACK_SIGNING_SECRET", "signing secret (needed by serve in HTTP mode)", default=None
    )
    slack_app_token: SecretStr | None = _env(
        "SLACK_APP_TOKEN",
        "app-level token, xapp-…; when set, serve uses Socket Mode",
        default=None,
    )
    slack_api_url: str = _env(
        "SLACK_API_URL", "Web API base URL, http(s)://…/api/", default="https://slack.com/api/"
    )
    redis_url: str = _env(
        "REDIS_URL",
        "memory:// (in-process), redis://, rediss:// or unix://",
        default="memory://",
    )
    namespace: str = _env(
        "GPU_BOT_NAMESPACE",
        "key prefix in Redis (letters, digits, - and _); one per bot sharing a Redis",
        default="gpu",
    )
    aws_mode: Literal["sandbox", "live"] = _env(
        "GPU_BOT_AWS",
        "sandbox (simulated market) or live (default credential chain)",
        default="sandbox",
    )
    aws_region: str = _env("AWS_REGION", "AWS region such as us-east-1", default="us-east-1")
    accounts: AccountMap = _env(
        "GPU_BOT_ACCOUNTS",
        "named AWS accounts and the role to assume in each: "
        "name=arn:aws:iam::111122223333:role/gpu-bot,… (empty: only the bot's own)",
        default_factory=dict,
    )
    default_account: str = _env(
        "GPU_BOT_DEFAULT_ACCOUNT",
        "the account a request without account= runs in: a name from GPU_BOT_ACCOUNTS, or "
        "default (the bot's own credentials)",
        default="default",
    )
    approvers: IdList = _env(
        "GPU_BOT_APPROVERS", "comma-separated Slack user ids (U…/W…)", default_factory=list
    )
    approver_group: str | None = _env(
        "GPU_BOT_APPROVER_GROUP",
        "Slack user group id (S…) whose members approve",
        default=None,
    )
    approval_channel: str | None = _env(
        "GPU_BOT_APPROVAL_CHANNEL",
        "channel id (C…/G…) where requests are posted",
        default=None,
    )
    second_approval_usd: float | None = _env(
        "GPU_BOT_SECOND_APPROVAL_USD",
        "USD, the most a request can cost, above which two different approvers are needed (> 0)",
        default=None,
    )
    max_request_usd: float | None = _env(
        "GPU_BOT_MAX_REQUEST_USD",
        "USD, the most a request can cost, above which it is refused (> 0)",
        default=None,
    )
    teams: TeamList = _env("GPU_BOT_TEAMS", TEAMS_ACCEPTED, default=())
    budgets: BudgetMap = _env(
        "GPU_BOT_BUDGETS",
        "monthly budget in USD per team: " + BUDGETS_ACCEPTED,
        default_factory=dict,
    )
    over_budget: OverBudget = _env(
        "GPU_BOT_OVER_BUDGET",
        "second-approval (a purchase that takes its team over its monthly budget needs two "
        "approvers) or refuse (it is refused)",
        default=OverBudget.SECOND_APPROVAL,
    )
    requests_visible: Literal["involved", "all"] = _env(
        "GPU_BOT_REQUESTS_VISIBLE",
        "involved (a request's requester and the approvers see it in full with /gpu status, "
        "others that it exists and its state) or all (everyone sees every request in full)",
        default="involved",
    )
    approval_timeout: timedelta = _env(
        "GPU_BOT_APPROVAL_TIMEOUT",
        "how long a request waits for approval, e.g. 24h",
        default=timedelta(hours=24),
    )
    idle_alert: timedelta = _env(
        "GPU_BOT_IDLE_ALERT",
        "how long nothing runs in a billing reservation before its requester is told, e.g. 2h",
        default=timedelta(hours=2),
    )
    remind_before_start: DurationList = _env(
        "GPU_BOT_REMIND_BEFORE_START",
        "lead times before start, e.g. 24h,1h",
        default_factory=lambda: [timedelta(hours=24), timedelta(hours=1)],
    )
    remind_before_expiry: DurationList = _env(
        "GPU_BOT_REMIND_BEFORE_EXPIRY",
        "lead times before expiry, e.g. 24h,2h",
        default_factory=lambda: [timedelta(hours=24), timedelta(hours=2)],
    )
    price_cache_ttl: timedelta = _env(
        "GPU_BOT_PRICE_CACHE_TTL",
        "how long live prices are cached, e.g. 15m",
        default=timedelta(minutes=15),
    )
    outlook_days: int = _env(
        "GPU_BOT_OUTLOOK_DAYS",
        "days of offering searches the capacity outlook remembers (and may be asked about), "
        "1 to 365",
        default=90,
        ge=1,
        le=365,
    )
    outlook_shapes: str = _env(
        "GPU_BOT_OUTLOOK_SHAPES",
        "shapes the outlook scan asks about on a rhythm, separated by ;, each "
        "COUNTx TYPE DURATION [REGION], e.g. 16x p5.48xlarge 3d us-east-1; empty: no scan",
        default="",
    )
    watches_per_person: int = _env(
        "GPU_BOT_WATCHES_PER_PERSON",
        "the most watches one person may have watching at once, 1 to 1000",
        default=WATCHES_PER_PERSON,
        ge=1,
        le=1000,
    )
    watches_total: int = _env(
        "GPU_BOT_WATCHES_TOTAL",
        "the most watches everyone together may have watching at once, 1 to 100000",
        default=WATCHES_TOTAL,
        ge=1,
        le=100_000,
    )
    watch_searches_per_minute: int = _env(
        "GPU_BOT_WATCH_SEARCHES_PER_MINUTE",
        "the most offering searches (AWS calls) the watch rounds make in any minute, "
        "whatever the number of questions; the others wait their turn, 1 to 600",
        default=SEARCHES_PER_WINDOW,
        ge=1,
        le=600,
    )
    delivery_settle: timedelta = _env(
        "GPU_BOT_DELIVERY_SETTLE",
        "after an uncertain Slack post, wait this long before looking for it, e.g. 30s",
        default=timedelta(seconds=30),
    )
    slack_timeout: timedelta = _env(
        "GPU_BOT_SLACK_TIMEOUT",
        "how long a Slack post is waited for before its outcome counts as unknown "
        "(keep it under GPU_BOT_DELIVERY_SETTLE), e.g. 10s",
        default=timedelta(seconds=10),
    )
    metrics_token: SecretStr | None = _env(
        "GPU_BOT_METRICS_TOKEN",
        "when set, /metrics answers only requests with Authorization: Bearer <this>",
        default=None,
    )
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = _env(
        "GPU_BOT_LOG_LEVEL", "DEBUG, INFO, WARNING or ERROR", default="INFO"
    )

    log_format: Literal["text", "json"] = _env(
        "GPU_BOT_LOG_FORMAT",
        "text (readable) or json (one object per line, for a log pipeline)",
        default="text",
    )

    @field_validator("approvers", mode="before")
    @classmethod
    def _split_ids(cls, value: Any) -> Any:
        return _split(value)

    @field_validator("remind_before_start", "remind_before_expiry", mode="before")
    @classmethod
    def _split_durations(cls, value: Any) -> Any:
        if isinstance(value, str):
            return [parse_config_duration(part) for part in _split(value)]
        return value

    @field_validator(
        "approval_timeout",
        "idle_alert",
        "price_cache_ttl",
        "delivery_settle",
        "slack_timeout",
        mode="before",
    )
    @classmethod
    def _duration(cls, value: Any) -> Any:
        return parse_config_duration(value) if isinstance(value, str) else value

    @field_validator("outlook_shapes")
    @classmethod
    def _scan_shapes(cls, value: str) -> str:
        from datetime import UTC, datetime

        from bot.domain.catalog import default_catalog
        from bot.domain.grammar import RequestSyntaxError
        from bot.domain.outlook_scan import MAX_SCAN_SEARCHES, parse_scan_shapes, scan_questions

        now, catalog = datetime.now(UTC), default_catalog()
        try:
            queries = parse_scan_shapes(value, catalog, now)
        except RequestSyntaxError as exc:
            raise ValueError(str(exc)) from None
        asked = len(scan_questions(queries, catalog, "us-east-1", now))
        if asked > MAX_SCAN_SEARCHES:
            raise ValueError(
                f"{asked} searches a round; at most {MAX_SCAN_SEARCHES} (fewer shapes or regions)"
            )
        return value

    @field_validator("teams", mode="before")
    @classmethod
    def _parse_teams(cls, value: Any) -> Any:
        return parse_teams(value) if isinstance(value, str) else value

    @field_validator("budgets", mode="before")
    @classmethod
    def _parse_budgets(cls, value: Any) -> Any:
        return parse_budgets(value) if isinstance(value, str) else value

    @model_validator(mode="after")
    def _budgets_of_teams(self) -> Settings:
        refused = budgets_refusal(self.budgets, self.teams)
        if refused is not None:
            raise ValueError(refused)
        return self

    @field_validator("accounts", mode="before")
    @classmethod
    def _split_accounts(cls, value: Any) -> Any:
        if not isinstance(value, str):
            return value
        pairs: dict[str, str] = {}
        for part in _split(value):
            name, sep, role = part.partition("=")
            if not sep:
                raise ValueError(f"{part!r} is not name=role-arn")
            pairs[name.strip().lower()] = role.strip()
        return pairs

    @field_validator("accounts")
    @classmethod
    def _account_roles(cls, value: dict[str, str]) -> dict[str, str]:
        for name, role in value.items():
            if not _ACCOUNT_NAME.fullmatch(name) or name == "default":
                raise ValueError(
                    f"{name!r} is not an account name (a-z, 0-9, - and _; not default)"
                )
            if not _ROLE_ARN.fullmatch(role):
                raise ValueError(
                    f"{role!r} is not an IAM role ARN (arn:aws:iam::123456789012:role/NAME)"
                )
        return value

    @model_validator(mode="after")
    def _default_account_known(self) -> Settings:
        if self.default_account != "default" and self.default_account not in self.accounts:
            raise ValueError(
                f"GPU_BOT_DEFAULT_ACCOUNT {self.default_account!r} is not in GPU_BOT_ACCOUNTS"
            )
        return self

    @field_validator("approvers")
    @classmethod
    def _user_ids(cls, value: list[str]) -> list[str]:
        bad = [v for v in value if not _USER_ID.fullmatch(v)]
        if bad:
            raise ValueError(f"not user ids: {', '.join(bad)}")
        return value

    @field_validator("approver_group")
    @classmethod
    def _group_id(cls, value: str | None) -> str | None:
        if value is not None and not _GROUP_ID.fullmatch(value):
            raise ValueError("not a user group id")
        return value

    @field_validator("approval_channel")
    @classmethod
    def _channel_id(cls, value: str | None) -> str | None:
        if value is not None and not _CHANNEL_ID.fullmatch(value):
            raise ValueError("not a channel id")
        return value

    @field_validator("slack_app_token")
    @classmethod
    def _app_token(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and not value.get_secret_value().startswith("xapp-"):
            raise ValueError("an app-level token starts with xapp-")
        return value

    @field_validator("slack_bot_token")
    @classmethod
    def _bot_token(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and not value.get_secret_value().startswith("xoxb-"):
            raise ValueError("a bot token starts with xoxb-")
        return value

    @field_validator("slack_api_url")
    @classmethod
    def _api_url(cls, value: str) -> str:
        if not re.fullmatch(r"https?://[^\s/]+(/\S*)?", value):
            raise ValueError("not an http(s) URL")
        return value if value.endswith("/") else value + "/"

    @field_validator("redis_url")
    @classmethod
    def _memory_needs_fakeredis(cls, value: str) -> str:
        if value.startswith("memory://") and importlib.util.find_spec("fakeredis") is None:
            raise ValueError(
                "memory:// needs the in-process server: pip install 'gpu-bot[memory]' "
                "(or use redis://)"
            )
        return value

    @field_validator("redis_url")
    @classmethod
    def _redis_url(cls, value: str) -> str:
        if not re.match(r"(memory|redis|rediss|unix)://", value):
            raise ValueError("unknown scheme")
        return value

    @field_validator("namespace")
    @classmethod
    def _namespace(cls, value: str) -> str:
        if not re.fullmatch(r"[A-Za-z0-9_-]{1,40}", value):
            raise ValueError("not a namespace")
        return value

    @field_validator("aws_region")
    @classmethod
    def _region(cls, value: str) -> str:
        if not _REGION.fullmatch(value):
            raise ValueError("not a region name")
        return value

    @field_validator("second_approval_usd", "max_request_usd")
    @classmethod
    def _positive(cls, value: float | None) -> float | None:
        # NaN compares false with everything: it would switch the money rule off.
        if value is not None and not math.isfinite(value):
            raise ValueError("must be a finite number")
        if value is not None and value <= 0:
            raise ValueError("must be above zero")
        return value

    @field_validator("remind_before_start", "remind_before_expiry")
    @classmethod
    def _lead_times(cls, value: list[timedelta]) -> list[timedelta]:
        return sorted(set(value), reverse=True)

    @model_validator(mode="after")
    def _limits_in_order(self) -> Settings:
        if (
            self.second_approval_usd is not None
            and self.max_request_usd is not None
            and self.second_approval_usd > self.max_request_usd
        ):
            raise ValueError(
                "GPU_BOT_SECOND_APPROVAL_USD is above GPU_BOT_MAX_REQUEST_USD: "
                "the second approval would never be asked for"
            )
        return self

    @property
    def sandbox(self) -> bool:
        return self.aws_mode == "sandbox"

    @property
    def watch_limits(self) -> WatchLimits:
        return WatchLimits(
            per_person=self.watches_per_person,
            total=self.watches_total,
            searches_per_window=self.watch_searches_per_minute,
        )

    @classmethod
    def describe(cls) -> list[tuple[str, str, str]]:
        """(variable, default, what it accepts) for every setting."""
        rows = []
        for name, field in cls.model_fields.items():
            alias = field.validation_alias
            assert isinstance(alias, AliasChoices)
            env = str(alias.choices[0])
            default = field.get_default(call_default_factory=True)
            rows.append((env, show_setting(default), field.description or name))
        return rows


class ConfigError(Exception):
    """Every bad variable, one per line, with what it accepts."""


def load_settings(**overrides: Any) -> Settings:
    """Settings from the environment; raises `ConfigError` listing every problem."""
    try:
        return Settings(**overrides)
    except ValidationError as exc:
        raise ConfigError(_format_errors(exc)) from None


def _format_errors(exc: ValidationError) -> str:
    accepted = {env: text for env, _default, text in Settings.describe()}
    lines = ["Bad configuration:"]
    for err in exc.errors():
        loc = err.get("loc") or ()
        env = str(loc[0]) if loc else ""
        given = err.get("input")
        problem = str(err.get("msg", "")).removeprefix("Value error, ")
        if env in accepted:
            shown = "" if isinstance(given, dict) else f"={mask(env, given)!s}"
            lines.append(f"  {env}{shown}: {problem}; accepted: {accepted[env]}")
        else:
            lines.append(f"  {problem}")
    return "\n".join(lines)
