"""A Prometheus server's HTTP API, the few calls nbgpumon makes, each with a timeout.

Every failure, whatever its cause (refused, timed out, HTTP 500, an HTML page, JSON of the
wrong shape), is a :class:`PrometheusError` whose text is one line a status can show.
"""

from __future__ import annotations

import base64
import json
import re
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any

from .._foundation.clipping import clipped

MAX_ANSWER = 32 * 2**20  # bytes read from one answer at most: a huge one is refused, not parsed


class PrometheusError(Exception):
    """A request that gave no usable answer; ``str()`` is one line saying why."""


@dataclass(frozen=True, slots=True)
class Series:
    """One time series of an answer: its labels and its (unix seconds, value) points."""

    labels: dict[str, str]
    points: tuple[tuple[float, float], ...]


def shown_url(url: str) -> str:
    """``url`` without credentials, for status lines (``http://user:pw@host`` -> ``http://host``)."""
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or ""
    netloc = f"[{host}]" if ":" in host else host
    if parts.port is not None:
        netloc += f":{parts.port}"
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))


def check_url(url: str) -> str:
    """``url`` as nbgpumon will use it (no trailing slash); ValueError names what's wrong."""
    url = url.strip()
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(
            f"{url!r} is not a Prometheus server's address; give its URL, "
            "e.g. http://prometheus.example:9090"
        )
    try:
        parts.port  # noqa: B018 - raises for a port that is not a number
    except ValueError:
        raise ValueError(f"{url!r} has a port that is not a number") from None
    if parts.query or parts.fragment:
        raise ValueError(f"{url!r} has a query or fragment; give the server's base URL")
    return url.rstrip("/")


class PrometheusClient:
    """Instant and range queries, and the scrape interval, from the server at ``url``."""

    def __init__(self, url: str, timeout: float = 5.0) -> None:
        self.url = check_url(url)
        self.timeout = timeout
        parts = urllib.parse.urlsplit(self.url)
        self._auth = None
        if parts.username is not None:  # basic auth in the URL, sent as a header
            netloc = parts.hostname or ""
            if parts.port is not None:
                netloc += f":{parts.port}"
            self.url = urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, "", ""))
            user = urllib.parse.unquote(parts.username)
            password = urllib.parse.unquote(parts.password or "")
            token = base64.b64encode(f"{user}:{password}".encode()).decode()
            self._auth = f"Basic {token}"

    def query(self, promql: str) -> tuple[float, list[Series]]:
        """An instant query now: (the server's evaluation time, the vector's series)."""
        data = self._get("/api/v1/query", {"query": promql})
        if data.get("resultType") != "vector":
            raise PrometheusError(f"expected a vector, got {data.get('resultType')!r}")
        series, at = [], None
        for item in _result(data):
            t, value = _point(item.get("value"))
            at = t if at is None else max(at, t)
            series.append(Series(_labels(item), ((t, value),)))
        return (at if at is not None else time.time()), series

    def query_range(self, promql: str, start: float, end: float, step: float) -> list[Series]:
        """A range query: each series' points from ``start`` to ``end`` every ``step`` s."""
        params = {
            "query": promql,
            "start": f"{start:.3f}",
            "end": f"{end:.3f}",
            "step": f"{step:g}",
        }
        data = self._get("/api/v1/query_range", params)
        if data.get("resultType") != "matrix":
            raise PrometheusError(f"expected a matrix, got {data.get('resultType')!r}")
        out = []
        for item in _result(data):
            values = item.get("values")
            if not isinstance(values, list):
                raise PrometheusError("a series of the answer has no values")
            out.append(Series(_labels(item), tuple(_point(v) for v in values)))
        return out

    def scrape_interval(self) -> float | None:
        """The shortest scrape interval of the server's active targets, else of its
        configuration (a server just started lists no target for a few seconds), in seconds;
        None when it does not say."""
        try:
            data = self._get("/api/v1/targets", {"state": "active"})
            targets = data.get("activeTargets", [])
            intervals = [_duration(t.get("scrapeInterval")) for t in targets if isinstance(t, dict)]
            if not any(intervals):
                config = self._get("/api/v1/status/config", {}).get("yaml", "")
                intervals = [_duration(v) for v in _SCRAPE_INTERVAL.findall(str(config))]
        except PrometheusError:
            return None
        found = [s for s in intervals if s is not None and s > 0]
        return min(found) if found else None

    # -- the one request ------------------------------------------------------------------
    def _get(self, path: str, params: dict[str, str]) -> dict[str, Any]:
        url = f"{self.url}{path}?{urllib.parse.urlencode(params)}"
        request = urllib.request.Request(url, headers={"Accept": "application/json"})
        if self._auth:
            request.add_header("Authorization", self._auth)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as answer:
                body = answer.read(MAX_ANSWER + 1)
        except urllib.error.HTTPError as exc:
            raise PrometheusError(_http_error(exc)) from None
        except urllib.error.URLError as exc:
            raise PrometheusError(_network_error(exc.reason, self.timeout)) from None
        except TimeoutError as exc:
            raise PrometheusError(_network_error(exc, self.timeout)) from None
        except OSError as exc:  # a connection reset mid-answer, and the like
            raise PrometheusError(_network_error(exc, self.timeout)) from None
        if len(body) > MAX_ANSWER:
            raise PrometheusError(f"the answer is over {MAX_ANSWER // 2**20} MiB; narrow --match")
        return _data(body)


def _data(body: bytes) -> dict[str, Any]:
    try:
        answer = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise PrometheusError("the answer is not JSON (is this a Prometheus server?)") from None
    if not isinstance(answer, dict):
        raise PrometheusError("the answer is not a Prometheus API answer")
    if answer.get("status") != "success":
        raise PrometheusError(f"the server says: {_one_line(answer.get('error', answer))}")
    data = answer.get("data")
    if not isinstance(data, dict):
        raise PrometheusError("the answer has no data")
    return data


def _result(data: dict[str, Any]) -> list[dict[str, Any]]:
    result = data.get("result")
    if not isinstance(result, list) or not all(isinstance(r, dict) for r in result):
        raise PrometheusError("the answer's result is not a list of series")
    return result


def _labels(item: dict[str, Any]) -> dict[str, str]:
    labels = item.get("metric", {})
    if not isinstance(labels, dict):
        raise PrometheusError("a series of the answer has no labels")
    return {str(k): str(v) for k, v in labels.items()}


def _point(value: Any) -> tuple[float, float]:
    try:
        t, v = value
        return float(t), float(v)  # "NaN", "+Inf" parse too
    except (TypeError, ValueError):
        raise PrometheusError(
            f"a sample of the answer is not [time, value]: {value!r:.60}"
        ) from None


def _http_error(exc: urllib.error.HTTPError) -> str:
    try:
        detail = _data(exc.read(64 * 1024)).get("error", "")
    except PrometheusError as inner:
        detail = str(inner).removeprefix("the server says: ")
    except OSError:
        detail = ""
    reason = f"HTTP {exc.code} {exc.reason}".strip()
    return f"{reason}: {_one_line(detail)}" if detail else reason


def _network_error(reason: object, timeout: float) -> str:
    if isinstance(reason, TimeoutError) or "timed out" in str(reason):
        return f"no answer within {timeout:g} s"
    if isinstance(reason, ConnectionRefusedError):
        return "connection refused (is the server running?)"
    if isinstance(reason, socket.gaierror):
        return "unknown host name"
    return _one_line(reason)


def _one_line(text: object, limit: int = 200) -> str:
    return clipped(" ".join(str(text).split()), limit)


_SCRAPE_INTERVAL = re.compile(r"^\s*scrape_interval:\s*(\S+)\s*$", re.MULTILINE)
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d|w|y)")
_SECONDS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800, "y": 31536000}


def _duration(text: object) -> float | None:
    """A Prometheus duration ("15s", "1m30s") in seconds; None for anything else."""
    if not isinstance(text, str) or not text:
        return None
    parts = _DURATION.findall(text)
    if "".join(n + u for n, u in parts) != text:
        return None
    return sum(float(n) * _SECONDS[u] for n, u in parts)
