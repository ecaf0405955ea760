"""Device sources: what the device itself says of each GPU (``protocol``: the roles), and the
sources that say it (``nvml/``: NVIDIA's driver library). Only the session's assembler picks
one; everything else asks a :class:`~.protocol.DeviceSource`."""
