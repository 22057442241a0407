#!/usr/bin/env bash
# pipecat, the peer `allnighter bench latency` measures first audio against, in a virtual
# environment of its own (.venv-pipecat): its dependencies are not Allnighter's. Idempotent.
# The bench gives it the Piper voice Allnighter ships; nothing is downloaded at run time.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
VENV=.venv-pipecat
if [ ! -x "$VENV/bin/python" ]; then
  echo "== creating $VENV"
  "$PY" -m venv "$VENV"
fi
# [webrtc]: its own WebRTC transport, which the bench's viewer of pipecat receives
if ! "$VENV/bin/python" -c "import pipecat.services.piper.tts, aiortc" 2>/dev/null; then
  echo "== installing pipecat-ai[piper,webrtc] 1.14.0 into $VENV"
  "$VENV/bin/pip" install -q --upgrade pip
  "$VENV/bin/pip" install -q "pipecat-ai[piper,webrtc]==1.14.0"
fi
