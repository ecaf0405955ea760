"""The public objects are the live ``Monitor`` and a loaded ``Recorded``, each a session with its
views. ``nbgpumon/__init__.py`` re-exports what the README documents."""
