# Sourced by run.sh and sim.sh: sets ns-3 up once from the PyPI `ns3`
# wheel (a venv under bench/ns3/.venv; the wheel's headers and shared
# libraries are all this needs: its Python bindings, and so cppyy, are
# left out) and compiles one of this directory's programs against it.
#
#   ns3_setup            installs the wheel if needed; sets $ns3 (its
#                        directory) and $lib_tag ("ns3.44")
#   ns3_compile NAME     compiles NAME.cc into $build/NAME if it is older
#                        than its source or than the calling script;
#                        prints the executable's path
#
# Expects $here (this directory), $venv, $build and $ns3_version.

log() { printf '== %s\n' "$*" >&2; }

ns3_setup() {
    local installed site
    installed="$("$venv/bin/python" -m pip show ns3 2>/dev/null | sed -n 's/^Version: //p' || true)"
    if [[ "$installed" != "$ns3_version" ]]; then
        log "installing ns3==$ns3_version into $venv"
        python3 -m venv "$venv"
        "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps "ns3==$ns3_version"
    fi
    site="$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["platlib"])')"
    ns3="$site/ns3"
    [[ -d "$ns3/include/ns3" && -d "$ns3/lib64" ]] || { echo "no ns-3 headers or libraries under $ns3" >&2; exit 1; }
    # The libraries are named libns3.44-core.so and so on: "ns3.44" is the tag.
    lib_tag="$(basename "$(ls "$ns3"/lib64/libns3.*-core.so | head -1)" | sed -E 's/^lib(ns3\.[0-9.]+)-core\.so$/\1/')"
}

ns3_compile() {
    local name="$1" exe="$build/$1"
    mkdir -p "$build"
    if [[ ! -x "$exe" || "$here/$name.cc" -nt "$exe" || "$0" -nt "$exe" || "$here/ns3.sh" -nt "$exe" ]]; then
        log "compiling $exe against $lib_tag"
        # The wheel's libraries are a "release" build with logging and
        # asserts compiled in (its CMake config says
        # NS3_BUILD_PROFILE_RELEASE, NS3_LOG_ENABLE, NS3_ASSERT_ENABLE):
        # the headers must see the same.
        g++ -O2 -std=c++20 -Wall \
            -DNS3_BUILD_PROFILE_RELEASE -DNS3_LOG_ENABLE -DNS3_ASSERT_ENABLE \
            -I"$ns3/include" "$here/$name.cc" -o "$exe" \
            -L"$ns3/lib64" -Wl,-rpath,"$ns3/lib64" \
            -l"$lib_tag"-applications -l"$lib_tag"-internet \
            -l"$lib_tag"-point-to-point -l"$lib_tag"-traffic-control \
            -l"$lib_tag"-network -l"$lib_tag"-core >&2
    fi
    printf '%s\n' "$exe"
}

# Builds squall (cargo build --release -p squall) unless $SQUALL names a
# binary; prints the binary's path.
squall_binary() {
    local squall
    if [[ -n "${SQUALL:-}" ]]; then
        squall="$SQUALL"
    else
        log "building squall (cargo build --release -p squall)"
        mkdir -p "$build"
        if ! (cd "$root" && cargo build --release -p squall ${JOBS:+-j "$JOBS"}) >"$build/cargo.log" 2>&1; then
            cat "$build/cargo.log" >&2
            echo "squall did not build; SQUALL=path runs another binary" >&2
            exit 1
        fi
        tail -1 "$build/cargo.log" >&2
        squall="$root/target/release/squall"
    fi
    [[ -x "$squall" ]] || { echo "no squall binary at $squall (set SQUALL=path)" >&2; exit 1; }
    printf '%s\n' "$squall"
}
