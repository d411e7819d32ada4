# Sourced by the scripts after scripts/setup.sh: Rust installed by rustup there is on PATH here.
case ":$PATH:" in
  *":$HOME/.cargo/bin:"*) ;;
  *) [ -d "$HOME/.cargo/bin" ] && export PATH="$HOME/.cargo/bin:$PATH" ;;
esac
