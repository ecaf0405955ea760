import sys
from pathlib import Path

# the tests import their helpers (notebook_runner) as plain modules
sys.path.insert(0, str(Path(__file__).parent))
