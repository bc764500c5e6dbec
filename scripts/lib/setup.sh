# Idempotent set-up shared by scripts/run and scripts/test (sourced, not executed).
# 1. Debian packages: the X server, D-Bus, AT-SPI, the apps the tests drive, and headless
#    Mutter with PipeWire and GStreamer (the private Wayland desktop, docs/wayland.md).
# 2. A .venv/ at the repo root with the project installed editable with its dev extras.
# 3. (tests only) the outside MCP clients the suite drives deskpilot with, from the npm
#    registry into tests/clients/node_modules/ (git-ignored), pinned by its package-lock.json.
# Re-running is cheap: packages already present and an unchanged pyproject.toml skip work.

DESKPILOT_APT_PACKAGES=(
  xvfb xauth dbus dbus-x11 at-spi2-core
  zenity gnome-calculator mousepad chromium
  fonts-dejavu-core x11-utils openbox xterm python3-gi gir1.2-gtk-3.0 python3-pyqt6 python3-pyqt5
  tesseract-ocr tesseract-ocr-eng libtesseract-dev libleptonica-dev pkg-config g++ python3-dev
  openssh-server openssh-client
  libreoffice-writer libreoffice-calc libreoffice-gtk3 gnome-text-editor
  thunar gimp libgail-common libatk-adaptor
  mutter pipewire wireplumber gstreamer1.0-pipewire gstreamer1.0-tools
)

_dp_log() { printf '[setup] %s\n' "$*" >&2; }

_dp_sudo() {
  if [ "$(id -u)" = "0" ]; then "$@"
  elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then sudo -n "$@"
  else return 126
  fi
}

dp_install_apt() {
  local missing=() p
  for p in "${DESKPILOT_APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  python3 -c 'import ensurepip, venv' 2>/dev/null || missing+=(python3-venv)
  [ "${#missing[@]}" -eq 0 ] && return 0
  if ! command -v apt-get >/dev/null 2>&1; then
    _dp_log "not a Debian system; please install: ${missing[*]}"; return 0
  fi
  _dp_log "installing Debian packages: ${missing[*]}"
  if ! _dp_sudo env DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null; then
    _dp_log "cannot install packages (need root or passwordless sudo): ${missing[*]}"; return 0
  fi
  _dp_sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
    "${missing[@]}" >/dev/null
}

dp_install_venv() {
  local root="$1" py="${DESKPILOT_PYTHON:-python3}"
  local stamp="$root/.venv/.deskpilot-stamp"
  local want
  want="$(cat "$root/pyproject.toml" | sha256sum | cut -d' ' -f1)"
  if [ ! -x "$root/.venv/bin/python" ]; then
    _dp_log "creating .venv with $($py --version 2>&1)"
    "$py" -m venv "$root/.venv"
  fi
  if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    _dp_log "installing deskpilot (editable, dev extras) into .venv"
    "$root/.venv/bin/python" -m pip install -q --upgrade pip >/dev/null
    # tesserocr is built against Debian's libtesseract, not its wheel's own copy (docs/vision.md)
    "$root/.venv/bin/python" -m pip install -q --no-binary tesserocr -e "$root[dev]"
    echo "$want" > "$stamp"
  fi
}

dp_install_clients() {
  local dir="$1/tests/clients"
  local stamp="$dir/node_modules/.deskpilot-stamp"
  local want
  if ! command -v npm >/dev/null 2>&1; then
    _dp_log "installing Debian packages: nodejs npm"
    _dp_sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q nodejs npm >/dev/null \
      || { _dp_log "cannot install nodejs/npm: the real-client tests will fail"; return 0; }
  fi
  want="$(cat "$dir/package.json" "$dir/package-lock.json" | sha256sum | cut -d' ' -f1)"
  if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    _dp_log "installing the test clients (npm ci) into tests/clients/node_modules"
    (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
    echo "$want" > "$stamp"
  fi
}

dp_setup() {
  local root="$1"
  dp_install_apt
  dp_install_venv "$root"
}
