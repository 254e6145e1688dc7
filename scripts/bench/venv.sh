#!/usr/bin/env bash
# venv.sh VENV — makes (or keeps) make bench's Python venv: the libraries of the peer rows (requirements.txt) from
# PyPI, TorchCodec and torch when they can be installed (requirements-torch.txt), and the trackd client from
# clients/python. Bench only: make test never uses it.
# The venv is kept while its key is the same: the hash of the requirement files, this script, the Python and
# BENCH_TORCH. The trackd client is installed again on every run (pure Python, no dependencies: seconds), so that
# the rows measure the client in the work tree.
# Environment: PYTHON (default /usr/bin/python3: Debian's, with venv), BENCH_TORCH: auto (default: torch and
# TorchCodec from requirements-torch.txt when pip finds them; else the TorchCodec rows say "not installed"),
# pypi (the newest torch and torchcodec from PyPI: CUDA builds, several GiB), no (no TorchCodec).
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
venv=${1:?usage: venv.sh VENV}
py=${PYTHON:-/usr/bin/python3}
torch=${BENCH_TORCH:-auto}
here=$REPO/scripts/bench
[[ $torch == auto || $torch == pypi || $torch == no ]] || die "BENCH_TORCH is '$torch', not auto, pypi or no"

key=$(cat "$here/requirements.txt" "$here/requirements-torch.txt" "${BASH_SOURCE[0]}" | sha256sum | cut -c1-16)
key+=" $("$py" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])') torch=$torch"
stamp=$venv/bench-venv.key
if [[ ! -f $stamp || $(<"$stamp") != "$key" ]]; then
  echo "==> making ${venv#"$REPO"/} (bench only; kept until scripts/bench/requirements*.txt change)"
  rm -rf "$venv"
  "$py" -m venv "$venv" || die "$py -m venv failed (Debian: apt-get install python3-venv)"
  pip=("$venv/bin/python" -m pip --disable-pip-version-check)
  "${pip[@]}" install -q -r "$here/requirements.txt" || die "pip could not install scripts/bench/requirements.txt"
  # TorchCodec is optional: when it cannot be installed, the venv is kept without it and the reason is written down.
  rm -f "$venv/torchcodec-missing"
  case $torch in
    auto) tc=(-r "$here/requirements-torch.txt") ;;
    pypi) tc=(torch torchcodec) ;;
    no) tc=() ;;
  esac
  if (( ${#tc[@]} == 0 )); then
    echo "BENCH_TORCH=no" >"$venv/torchcodec-missing"
  elif ! "${pip[@]}" install -q "${tc[@]}" 2>"$venv/torchcodec.err"; then
    echo "note: TorchCodec not installed (pip: $(grep -m1 ERROR "$venv/torchcodec.err" || tail -n 1 "$venv/torchcodec.err"))"
    echo "pip could not install ${tc[*]}" >"$venv/torchcodec-missing"
  elif ! err=$("$venv/bin/python" -c 'import torchcodec.decoders' 2>&1); then
    echo "note: TorchCodec installed but does not load: $(tail -n 1 <<<"$err")"
    echo "installed but does not load: $(tail -n 1 <<<"$err")" >"$venv/torchcodec-missing"
  else
    rm -f "$venv/torchcodec.err"
  fi
  echo "$key" >"$stamp"
  echo "    $(du -sh "$venv" | cut -f1) in ${venv#"$REPO"/}"
fi
# The client, as users install it (its numpy: PyPI's, from requirements.txt).
"$venv/bin/python" -m pip --disable-pip-version-check install -q --no-deps --no-build-isolation --force-reinstall \
  "$REPO/clients/python" || die "pip could not install clients/python into ${venv#"$REPO"/}"
