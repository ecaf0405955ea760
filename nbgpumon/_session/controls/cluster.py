"""Reading other nodes' GPUs: a Prometheus source started and stopped on the sampler, the
store of their samples, and the GPUMon settings kept saying what is read."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._foundation.errors import UsageError
from ..._sampling.node_timeline import NodeTimeline
from ..facts.session_data import Cluster, ClusterState

if TYPE_CHECKING:
    from ..._sampling.sampler import Sampler
    from ..._sources.base import RemoteState
    from ..._sources.prometheus import PrometheusSource
    from ..config import GPUMon

CLUSTER_WAIT = 3.0  # seconds read() waits for the server's first answer
SETTINGS = (
    "prometheus_url", "prometheus_match", "cluster_interval", "cluster_timeout",
    "cluster_host_label",
)  # fmt: skip


class ClusterControl:
    """One session's cluster reading (the Prometheus source is imported on first use)."""

    def __init__(self, config: GPUMon, sampler: Sampler) -> None:
        self.config, self.sampler = config, sampler
        self.nodes: NodeTimeline | None = None  # other nodes' GPUs, once a cluster is read
        self.url = ""
        self._syncing = False  # set while read() writes the GPUMon settings
        self._last_state: RemoteState | None = None  # the source's when it was stopped

    def cluster(self) -> Cluster | None:
        """What views read of it; None before a cluster was ever read."""
        if self.nodes is None:
            return None
        return Cluster(self.nodes, self.url, state=self.state, interval=self._every)

    def read(
        self,
        url: str | None,
        match: str | None = None,
        host_label: str | None = None,
        wait: float = CLUSTER_WAIT,
    ) -> ClusterState:
        """Read the Prometheus server at ``url`` from now on (None: stop); see
        ``Monitor.read_cluster``, which shows these parameters. What it did back: the source
        started (its first answer, or none yet) or stopped (None: there was none)."""
        from ..._sources.prometheus import PrometheusSource

        if url is None:
            had = self.sampler.remote
            self.stop()
            self._sync_settings("", self.config.prometheus_match, self.config.cluster_host_label)
            return ClusterState(had.state if isinstance(had, PrometheusSource) else None)
        match = self.config.prometheus_match if match is None else match
        host_label = self.config.cluster_host_label if host_label is None else host_label
        try:
            source = PrometheusSource(
                url,
                match,
                interval=self.config.cluster_interval,
                timeout=self.config.cluster_timeout,
                host_label=host_label,
            )
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        self.stop()
        self.node_timeline()
        self.url = source.url
        self.sampler.remote = source
        source.start()
        self._sync_settings(url, source.match, source.host_label)
        if wait > 0 and source.wait_first(wait):
            self._take_now(source)  # so that what is shown next has the first answer
        return ClusterState(source.state)  # (still CONNECTING: no answer yet)

    def setting_changed(self, name: str, old: object) -> ClusterState | None:
        """What ``%config GPUMon.prometheus_url = URL`` (or its match or interval while one is read)
        did to reading, None for nothing; a bad value puts the setting back and raises
        UsageError."""
        if self._syncing or (name != "prometheus_url" and not self.config.prometheus_url):
            return None
        try:
            return self.read(self.config.prometheus_url or None)
        except UsageError:
            self._syncing = True  # the setting goes back to what is read
            try:
                setattr(self.config, name, old)
            finally:
                self._syncing = False
            raise

    def recorded_nodes(self) -> tuple[NodeTimeline, str] | None:
        """What the recorder writes beside this kernel's samples (asked on its own thread)."""
        nodes = self.nodes
        return (nodes, self.url) if nodes is not None else None

    def node_timeline(self) -> NodeTimeline:
        """The store of other nodes' samples, made on first use; the sampler fills it."""
        if self.nodes is None:
            self.nodes = NodeTimeline()
            self.sampler.nodes = self.nodes
        return self.nodes

    def stop(self) -> None:
        """Stop the source being read, keeping what it fetched."""
        remote, self.sampler.remote = self.sampler.remote, None
        if remote is None:
            return
        from ..._sources.prometheus import PrometheusSource

        if isinstance(remote, PrometheusSource):
            remote.stop()
            self._last_state = remote.state
            self._take_now(remote)  # what it fetched and no tick took yet

    def state(self) -> ClusterState:
        """What the source is doing now (or said when it stopped), and the GPUs not kept."""
        remote = self.sampler.remote
        nodes = self.nodes
        return ClusterState(
            remote.state if remote is not None else self._last_state,
            nodes.refused_gpus if nodes is not None else 0,
            nodes.max_gpus if nodes is not None else 0,
        )

    def _every(self) -> float:
        return float(getattr(self.sampler.remote, "interval", 0.0))

    def _take_now(self, source: PrometheusSource) -> None:
        if self.nodes is not None:
            for reading in source.take():
                self.nodes.add(reading)

    def _sync_settings(self, url: str, match: str, host_label: str) -> None:
        self._syncing = True
        try:
            self.config.prometheus_url = url
            self.config.prometheus_match = match
            self.config.cluster_host_label = host_label
        finally:
            self._syncing = False
