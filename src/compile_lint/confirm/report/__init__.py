"""Report: matching observations to static findings, checking fixes, writing reproducers."""
