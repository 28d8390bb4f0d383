# shellcheck shell=bash
# shellcheck disable=SC2034  # WAN_* variables are this library's interface to its callers
# Emulated WAN on one Linux machine with network namespaces: a library to `source`, not to run.
#
# A topology is one "bridge" namespace holding a Linux bridge, plus one namespace per node joined
# to it by a veth pair (eth0 in the node, pN in the bridge namespace), every node on 10.77.0.0/16
# (by convention region R's nodes are 10.77.R.x and a region-less node such as a coordinator is
# 10.77.0.x). Links between regions are emulated per node, on eth0's egress: an htb root whose
# default class is unlimited, and per limited destination a u32 filter on the destination prefix
# sending to a class whose leaf is a tbf at the given rate. Each node shapes what it sends, so a
# limit set on both ends shapes both directions; traffic inside a region stays unlimited.
#
# Everything is created inside namespaces named WAN_PREFIX-*: the root namespace gets no address,
# interface, route or qdisc, and two topologies with different prefixes never collide.
#
#   source scripts/wan/netns.sh
#   wan_probe || echo "no namespaces: $WAN_PROBE_ERROR"
#   wan_setup                               # or wan_setup my-prefix
#   trap wan_cleanup EXIT; trap 'exit 130' INT TERM
#   wan_add_node coord 10.77.0.1
#   wan_add_node a1 10.77.1.1;  wan_add_node b1 10.77.2.1
#   wan_limit a1 10.77.2.0/24 50;  wan_limit b1 10.77.1.0/24 50   # 50 Mbit/s each way
#   wan_exec_prefix a1; "${WAN_EXEC[@]}" some-server --listen 10.77.1.1:80 & server=$!
#   wan_exec b1 curl http://10.77.1.1/
#   wan_set_rate a1 10.77.2.0/24 10         # change a limit while traffic flows
#   wan_link a1 down; wan_link a1 up        # cut a node off and reconnect it
#
# Requires root, iproute2 (ip, tc) and a kernel with veth, bridge, htb, tbf and u32. Functions
# return non-zero with a message on stderr on failure; none of them exits the caller.

WAN_PREFIX=""
# Why wan_probe failed (empty after success); for callers.
WAN_PROBE_ERROR=""
# Node name -> namespace, address, and "dest=classid" entries of its limits.
declare -gA WAN_NODE_NS=()
declare -gA WAN_NODE_ADDR=()
declare -gA WAN_NODE_LIMITS=()
# Node name -> how many wan_delay devices it has.
declare -gA WAN_NODE_DELAYS=()
WAN_NODES=()
WAN_EXEC=()
# Seconds wan_cleanup waits after SIGTERM before it SIGKILLs what still runs in a namespace.
WAN_KILL_GRACE_SECONDS=${WAN_KILL_GRACE_SECONDS:-5}

_wan_err() { echo "wan: $*" >&2; }

# wan's tbf leaf: `_wan_tbf add|change NS CLASS_MINOR MBIT`. The burst is at least 10 ms at the
# rate (tbf needs rate/HZ at least, and a veth hands it 64 kB GSO packets that it must split);
# the queue holds 200 ms before it drops.
_wan_tbf() {
  local verb=$1 ns=$2 minor=$3 mbit=$4
  local burst=$((mbit * 125000 / 100))
  ((burst < 32768)) && burst=32768
  tc -n "$ns" qdisc "$verb" dev eth0 parent "1:$minor" handle "$minor:" \
    tbf rate "${mbit}mbit" burst "$burst" latency 200ms
}

_wan_valid_rate() {
  [[ $1 =~ ^[1-9][0-9]*$ ]] ||
    { _wan_err "rate '$1' is not a positive whole number of Mbit/s"; return 1; }
}

# wan_probe: 0 when this process can build a topology (root, ip and tc, namespaces, veth, htb +
# tbf + u32 on a veth); otherwise 1 with the reason in WAN_PROBE_ERROR. Leaves nothing behind.
wan_probe() {
  WAN_PROBE_ERROR=""
  if [[ $(id -u) -ne 0 ]]; then WAN_PROBE_ERROR="not root"; return 1; fi
  local tool
  for tool in ip tc; do
    command -v "$tool" >/dev/null ||
      { WAN_PROBE_ERROR="$tool (iproute2) is not installed"; return 1; }
  done
  local a="gtwan-probe-$$-$RANDOM-a" b="gtwan-probe-$$-$RANDOM-b" step out
  _wan_probe_step() {
    step=$1; shift
    out=$("$@" 2>&1) || { WAN_PROBE_ERROR="$step failed: ${out:-exit code $?}"; return 1; }
  }
  if _wan_probe_step "ip netns add" ip netns add "$a" &&
     _wan_probe_step "ip netns add" ip netns add "$b" &&
     _wan_probe_step "a veth pair between namespaces" \
       ip -n "$a" link add eth0 type veth peer name eth0 netns "$b" &&
     _wan_probe_step "a bridge" ip -n "$b" link add br0 type bridge &&
     _wan_probe_step "an htb qdisc" tc -n "$a" qdisc add dev eth0 root handle 1: htb default 1 &&
     _wan_probe_step "an htb class" \
       tc -n "$a" class add dev eth0 parent 1: classid 1:2 htb rate 100gbit quantum 60000 &&
     _wan_probe_step "a tbf qdisc" _wan_tbf add "$a" 2 10 &&
     _wan_probe_step "a u32 filter" tc -n "$a" filter add dev eth0 parent 1: protocol ip prio 1 \
       u32 match ip dst 10.77.2.0/24 flowid 1:2; then
    ip netns del "$a" 2>/dev/null; ip netns del "$b" 2>/dev/null
    return 0
  fi
  ip netns del "$a" 2>/dev/null || true
  ip netns del "$b" 2>/dev/null || true
  return 1
}

# wan_setup [PREFIX]: starts a topology: the bridge namespace PREFIX-br. PREFIX defaults to
# gtwan-PID-RANDOM; an existing namespace with the prefix is an error (another run owns it).
wan_setup() {
  local prefix=${1:-gtwan-$$-$RANDOM}
  [[ $prefix =~ ^[A-Za-z0-9][A-Za-z0-9_.-]*$ ]] ||
    { _wan_err "prefix '$prefix': letters, digits, '_', '.', '-' only"; return 1; }
  [[ -z $WAN_PREFIX ]] ||
    { _wan_err "a topology ($WAN_PREFIX) is already set up; wan_cleanup first"; return 1; }
  if ip netns list 2>/dev/null | awk '{print $1}' | grep -q -- "^$prefix-"; then
    _wan_err "namespaces named $prefix-* exist already; choose another prefix"
    return 1
  fi
  WAN_PREFIX=$prefix
  WAN_NODE_NS=(); WAN_NODE_ADDR=(); WAN_NODE_LIMITS=(); WAN_NODE_DELAYS=(); WAN_NODES=()
  local br=$WAN_PREFIX-br
  ip netns add "$br" || return 1
  ip -n "$br" link set lo up &&
    ip -n "$br" link add br0 type bridge &&
    ip -n "$br" link set br0 up
}

# wan_add_node NAME ADDRESS: namespace PREFIX-NAME with loopback up and eth0 = ADDRESS/16, bridged
# to every other node.
wan_add_node() {
  local name=$1 address=$2
  [[ -n $WAN_PREFIX ]] || { _wan_err "wan_setup first"; return 1; }
  [[ $name =~ ^[A-Za-z0-9_-]+$ ]] ||
    { _wan_err "node name '$name': letters, digits, '_', '-' only"; return 1; }
  [[ -z ${WAN_NODE_NS[$name]:-} ]] || { _wan_err "node $name exists"; return 1; }
  [[ $address =~ ^10\.77\.[0-9]{1,3}\.[0-9]{1,3}$ ]] ||
    { _wan_err "node $name: address '$address' is not in 10.77.0.0/16"; return 1; }
  local ns=$WAN_PREFIX-$name br=$WAN_PREFIX-br port="p${#WAN_NODES[@]}"
  ip netns add "$ns" || return 1
  WAN_NODE_NS[$name]=$ns
  WAN_NODE_ADDR[$name]=$address
  WAN_NODE_LIMITS[$name]=""
  WAN_NODES+=("$name")
  ip -n "$ns" link set lo up &&
    ip -n "$ns" link add eth0 type veth peer name "$port" netns "$br" &&
    ip -n "$br" link set "$port" master br0 &&
    ip -n "$br" link set "$port" up &&
    ip -n "$ns" addr add "$address/16" dev eth0 &&
    ip -n "$ns" link set eth0 up
}

# wan_limit NODE DEST_CIDR MBIT: what NODE sends to DEST_CIDR goes at most MBIT Mbit/s.
wan_limit() {
  local name=$1 dest=$2 mbit=$3
  local ns=${WAN_NODE_NS[$name]:-}
  [[ -n $ns ]] || { _wan_err "no node $name"; return 1; }
  _wan_valid_rate "$mbit" || return 1
  [[ $dest =~ ^[0-9]{1,3}(\.[0-9]{1,3}){3}/[0-9]{1,2}$ ]] ||
    { _wan_err "destination '$dest' is not an IPv4 prefix A.B.C.D/N"; return 1; }
  [[ " ${WAN_NODE_LIMITS[$name]} " != *" $dest="* ]] ||
    { _wan_err "node $name already limits $dest; use wan_set_rate"; return 1; }
  if [[ -z ${WAN_NODE_LIMITS[$name]} ]]; then
    # Class 1:1, the default, is unlimited; htb's own rate there only has to exceed any veth.
    tc -n "$ns" qdisc add dev eth0 root handle 1: htb default 1 &&
      tc -n "$ns" class add dev eth0 parent 1: classid 1:1 htb rate 100gbit quantum 60000 ||
      return 1
  fi
  local count
  count=$(wc -w <<<"${WAN_NODE_LIMITS[$name]}")
  local minor=$((count + 2))
  tc -n "$ns" class add dev eth0 parent 1: classid "1:$minor" htb rate 100gbit quantum 60000 &&
    _wan_tbf add "$ns" "$minor" "$mbit" &&
    tc -n "$ns" filter add dev eth0 parent 1: protocol ip prio 1 u32 match ip dst "$dest" \
      flowid "1:$minor" || return 1
  WAN_NODE_LIMITS[$name]="${WAN_NODE_LIMITS[$name]} $dest=$minor"
}

# wan_set_rate NODE DEST_CIDR MBIT: changes a limit made by wan_limit, in place.
wan_set_rate() {
  local name=$1 dest=$2 mbit=$3 entry minor=""
  local ns=${WAN_NODE_NS[$name]:-}
  [[ -n $ns ]] || { _wan_err "no node $name"; return 1; }
  _wan_valid_rate "$mbit" || return 1
  for entry in ${WAN_NODE_LIMITS[$name]}; do
    [[ ${entry%=*} == "$dest" ]] && minor=${entry#*=}
  done
  [[ -n $minor ]] ||
    { _wan_err "node $name has no limit towards $dest (wan_limit first)"; return 1; }
  _wan_tbf change "$ns" "$minor" "$mbit"
}

# wan_delay NODE DEST_CIDR MS: what NODE sends to DEST_CIDR arrives MS ms later (one way), through
# a user-space delay (scripts/wan/delay.py on a TUN device in the node, since netem is missing):
# policy routing sends the node's own packets for DEST_CIDR into tun dlyN, delay.py writes each
# back after MS, and the node forwards it to eth0 (and its tbf limit, if any). For links of a few
# hundred Mbit/s at most (Python moves some tens of thousands of packets a second).
wan_delay() {
  local name=$1 dest=$2 ms=$3
  local ns=${WAN_NODE_NS[$name]:-} address=${WAN_NODE_ADDR[$name]:-}
  [[ -n $ns ]] || { _wan_err "no node $name"; return 1; }
  [[ $ms =~ ^[0-9]+$ ]] && ((ms <= 10000)) ||
    { _wan_err "delay '$ms' is not a whole number of milliseconds in 0..10000"; return 1; }
  [[ $dest =~ ^[0-9]{1,3}(\.[0-9]{1,3}){3}/[0-9]{1,2}$ ]] ||
    { _wan_err "destination '$dest' is not an IPv4 prefix A.B.C.D/N"; return 1; }
  local index=${WAN_NODE_DELAYS[$name]:-0}
  local dev=dly$index table=$((100 + index))
  local script
  script="$(dirname "${BASH_SOURCE[0]}")/delay.py"
  ip netns exec "$ns" sysctl -q -w net.ipv4.ip_forward=1 net.ipv4.conf.all.rp_filter=0 &&
    ip -n "$ns" tuntap add dev "$dev" mode tun &&
    ip netns exec "$ns" sysctl -q -w "net.ipv4.conf.$dev.rp_filter=0" \
      "net.ipv4.conf.$dev.accept_local=1" &&
    ip -n "$ns" link set "$dev" txqueuelen 10000 up &&
    ip -n "$ns" route add "$dest" dev "$dev" src "$address" table "$table" &&
    ip -n "$ns" rule add iif "$dev" lookup main pref 100 &&
    ip -n "$ns" rule add to "$dest" lookup "$table" pref $((200 + index)) || return 1
  ip netns exec "$ns" python3 "$script" --device "$dev" --delay-ms "$ms" \
    >/dev/null 2>"/tmp/$ns-$dev.log" &
  WAN_NODE_DELAYS[$name]=$((index + 1))
}

# wan_link NODE up|down: connects or disconnects NODE (its eth0), e.g. to emulate a partition.
wan_link() {
  local ns=${WAN_NODE_NS[$1]:-}
  [[ -n $ns ]] || { _wan_err "no node $1"; return 1; }
  [[ $2 == up || $2 == down ]] || { _wan_err "wan_link $1: '$2' is neither up nor down"; return 1; }
  ip -n "$ns" link set eth0 "$2"
}

# wan_ns NODE / wan_addr NODE: print the node's namespace / address.
wan_ns() { [[ -n ${WAN_NODE_NS[$1]:-} ]] && echo "${WAN_NODE_NS[$1]}"; }
wan_addr() { [[ -n ${WAN_NODE_ADDR[$1]:-} ]] && echo "${WAN_NODE_ADDR[$1]}"; }

# wan_exec NODE COMMAND...: runs COMMAND in NODE's namespace. `wan_exec ... &` runs in a
# subshell, so its `$!` is not COMMAND's pid; where the pid matters, use wan_exec_prefix.
wan_exec() {
  local ns=${WAN_NODE_NS[$1]:-}
  [[ -n $ns ]] || { _wan_err "no node $1"; return 1; }
  shift
  ip netns exec "$ns" "$@"
}

# wan_exec_prefix NODE: sets the array WAN_EXEC to the words that run a command in NODE's
# namespace (`ip netns exec NS`); `"${WAN_EXEC[@]}" COMMAND &` then leaves COMMAND's own pid in
# `$!`, since `ip netns exec` execs it.
wan_exec_prefix() {
  local ns=${WAN_NODE_NS[$1]:-}
  [[ -n $ns ]] || { _wan_err "no node $1"; return 1; }
  WAN_EXEC=(ip netns exec "$ns")
}

# wan_stats NODE: the node's qdiscs with their counters (bytes sent, drops, overlimits).
wan_stats() {
  local ns=${WAN_NODE_NS[$1]:-}
  [[ -n $ns ]] || { _wan_err "no node $1"; return 1; }
  tc -n "$ns" -s qdisc show dev eth0
}

# wan_namespaces: every namespace of this topology that exists, one a line.
wan_namespaces() {
  [[ -n $WAN_PREFIX ]] || return 0
  ip netns list 2>/dev/null | awk '{print $1}' | grep -- "^$WAN_PREFIX-" || true
}

# wan_cleanup: stops every process in the topology's namespaces (SIGTERM, then SIGKILL after
# WAN_KILL_GRACE_SECONDS) and deletes the namespaces. Idempotent, safe in EXIT/INT/TERM traps and
# before wan_setup; finds the namespaces by prefix, so ones a failed step left half-made go too.
wan_cleanup() {
  [[ -n $WAN_PREFIX ]] || return 0
  local namespaces ns waited=0
  local -a pids
  mapfile -t namespaces < <(wan_namespaces)
  _wan_pids() {
    pids=()
    for ns in "${namespaces[@]}"; do
      mapfile -t -O "${#pids[@]}" pids < <(ip netns pids "$ns" 2>/dev/null || true)
    done
  }
  _wan_pids
  ((${#pids[@]} == 0)) || kill -TERM "${pids[@]}" 2>/dev/null || true
  while ((${#pids[@]} > 0 && waited < WAN_KILL_GRACE_SECONDS * 10)); do
    sleep 0.1
    waited=$((waited + 1))
    _wan_pids
  done
  ((${#pids[@]} == 0)) || kill -KILL "${pids[@]}" 2>/dev/null || true
  for ns in "${namespaces[@]}"; do ip netns del "$ns" 2>/dev/null || true; done
  WAN_PREFIX=""
  WAN_NODE_NS=(); WAN_NODE_ADDR=(); WAN_NODE_LIMITS=(); WAN_NODE_DELAYS=(); WAN_NODES=()
  return 0
}
