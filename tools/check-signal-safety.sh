#!/usr/bin/env bash
# Checks that every entry point of the built library is async-signal-safe, as README.md
# promises ("Every function is ... async-signal-safe"): that every external function the
# entry points can reach is on an allow-list of async-signal-safe functions
# (signal-safety(7)), and that every indirect call they can reach is one of the two kinds
# that are known to be safe.
#
# How: disassembles the .so (objdump) and builds a call graph over its functions: the
# symbols of .text, GCC's local clones (foo.cold, foo.part.0, foo.constprop.0, foo.isra.0)
# included. A function has an edge to
#   -->  every function it calls or jumps to (call, jmp, jcc: tail calls and the jumps
#        between a function and its .cold part included);
#   &->  every function whose address it takes: a rip-relative operand (lea) that points
#        into .text, or a load of a GOT slot that holds a function's address. Taking an
#        address counts as calling it: that is how the ifunc resolvers hand out the real
#        entry points, and how pthread_create or pthread_atfork would get a function.
# A call through the PLT (foo@plt), or through the GOT (call *foo@GOTPCREL(%rip), with
# -fno-plt), is a call of the external function foo, unless the library defines foo
# itself (an exported function called through its PLT entry), which is then followed.
# The roots are every function the library exports (nm -D --defined-only: text, weak and
# GNU ifunc symbols, whatever their names and versions), so the check is the same for any
# .so: libvclock.so (the C API), the LD_PRELOAD shim (libvclock_preload.so: the libc
# functions it interposes), a vDSO image. The GNU ifuncs (vclock_gettime, ...) root their
# resolvers, which take the addresses of the per-ordering variants; a call through the PLT
# slot of the library's own ifunc (R_X86_64_IRELATIVE) goes to its resolver likewise. The
# shim's functions that choose its entry points (SHIM_CHOOSERS) are roots too: each clock
# reader jumps through a pointer (SHIM_TABLES) that holds only what those choosers take the
# address of, or its first-call function, so walking them walks every possible target.
# A few exports are not async-signal-safe by their own contract (NOT_SIGNAL_SAFE, each with
# its reason): what only they reach is listed, not held to the rules.
#
# An indirect call or jump (call *%rax, jmp *%rax) is accepted only if it is
#   - a vDSO call: in one of VDSO_CALLERS below (kernel_clock.cc's gettime, getres and
#     gettimeofday, whose only indirect calls go to the kernel's vDSO), or through a
#     register loaded from VDSO_TABLE on every path (the pointers kernel_clock.cc found in
#     the vDSO; GCC inlines those calls into other functions at -O3); or
#   - a jump through one of SHIM_TABLES (see above), or a call through the shim's
#     pointers to libc's own function of the name the program called (next_timespec_get,
#     and the `real` tables of virtual_waits.cc and virtual_timers.cc: found by the
#     constructor with dlsym(RTLD_NEXT), passed the call on; as safe as libc's); or
#   - a call through a register that holds, on every path to it (a data flow over the
#     function: loads, copies, cmov), only such pointers or the address of one of the
#     library's own functions (which is then walked); or
#   - a switch's jump table: jmp *%rX just after "add %rB,%rX", where %rB was loaded by a
#     "lea T(%rip)" of a read-only table in the same function, and the table's 32-bit
#     entries (offsets from T, read from the file) all land in the function or its .cold
#     part. The entries are read until the first one that does not: the table's size is
#     the compiler's bound check, which this trusts.
# Anything else is reported. Function pointers kept in data (vtables) are not followed: the
# only way to call them is an indirect call, which fails unless it is one of the above.
#
# arm64 (an AArch64 .so, such as the arm64 preset's cross build): the same walk, read with
# aarch64-linux-gnu-objdump and -nm (the host's on an arm64 machine). Calls and branches are
# bl, b, b.cond, cbz/cbnz/tbz/tbnz, blr and br; an address is formed in two instructions
# (adrp and an add or a load), which a data flow over each function follows; a load from
# such an address takes every relocated function pointer it reads (ldp q0, q1 copies a
# table of four); csel joins like cmov; a switch's jump table is GCC's ldrb/ldrh of
# instruction counts from an adr label. A call through a TLS descriptor (a thread_local of
# the global-dynamic model, which may allocate) is an unknown indirect call: it fails.
#
# Output: each external function reachable from a root, with one shortest chain from a
# root (demangled), "ok" with the reason it is allowed, or "FAIL"; each accepted indirect
# branch; each unexplained one as "FAIL".
# Usage: tools/check-signal-safety.sh [path/to/libvclock.so, libvclock_preload.so, any .so]
#   default build/release/libvclock.so, the release preset's -O3 build; the library must
#   keep its symbol table (not stripped), which tells its local functions apart.
# Exit status: 0 pass, 1 a check failed (or the library is missing), 77 skipped (an x86-64
# library on another machine, or no objdump, nm, c++filt or python3 for its architecture).
set -euo pipefail

lib=${1:-}
shown=${lib}
if [[ -n ${lib} && ${lib} != /* ]]; then
  lib=${PWD}/${lib}  # relative to the caller's directory, not the repository's
fi
cd "$(dirname "${BASH_SOURCE[0]}")/.."
lib=${lib:-build/release/libvclock.so}
shown=${shown:-${lib}}

if [[ ! -f ${lib} ]]; then
  echo "check-signal-safety: FAIL: ${shown} not found; build it first" \
    "(cmake --preset release && cmake --build --preset release)"
  exit 1
fi
# The architecture from the ELF header's e_machine (62 x86-64, 183 AArch64), and the
# binutils that read it: the host's for the host's architecture, aarch64-linux-gnu-'s for an
# arm64 library on another machine (the arm64 preset's cross build).
machine=$(od -An -tu2 -j18 -N2 "${lib}" | tr -d ' ')
case ${machine} in
  62) arch=x86_64 ;;
  183) arch=arm64 ;;
  *)
    echo "check-signal-safety: FAIL: ${shown} is neither an x86-64 nor an arm64 ELF file"
    exit 1
    ;;
esac
host=$(uname -m)
if [[ ${arch} == x86_64 && ${host} == x86_64 ]] \
  || [[ ${arch} == arm64 && ${host} == aarch64 ]]; then
  objdump=objdump nm=nm
elif [[ ${arch} == arm64 ]]; then
  objdump=aarch64-linux-gnu-objdump nm=aarch64-linux-gnu-nm
else
  echo "check-signal-safety: skipped: an x86-64 library, and this is ${host}"
  exit 77
fi
for tool in "${objdump}" "${nm}" c++filt python3; do
  if ! command -v "${tool}" >/dev/null; then
    echo "check-signal-safety: skipped: no ${tool}"
    exit 77
  fi
done
if [[ -z $("${nm}" "${lib}" 2>/dev/null | head -1) ]]; then
  echo "check-signal-safety: FAIL: ${shown} has no symbol table (stripped?): the local" \
    "functions could not be told apart"
  exit 1
fi

exec python3 - "${lib}" "${shown}" "${arch}" "${objdump}" "${nm}" <<'PYTHON'
import bisect
import re
import subprocess
import sys
from collections import deque

LIB, SHOWN = sys.argv[1], sys.argv[2]  # the file, and the name to print
ARCH, OBJDUMP, NM = sys.argv[3], sys.argv[4], sys.argv[5]  # x86_64 or arm64, and its binutils

# External functions that may be reached, with the reason each is async-signal-safe.
# signal-safety(7) (POSIX.1-2008 TC2 and POSIX.1-2016) lists most of them; the others
# are glibc functions that are safe for the reason given.
ALLOWED = {
    # System calls: on signal-safety(7)'s list.
    "open": "signal-safety(7)",
    "openat": "signal-safety(7)",
    "read": "signal-safety(7)",
    "write": "signal-safety(7)",
    "close": "signal-safety(7)",
    "lseek": "signal-safety(7) (vclock_stamps_export_append: the record goes after the last whole one)",
    "fstat": "signal-safety(7)",
    "fstatat": "signal-safety(7)",
    "clock_gettime": "signal-safety(7)",
    "getpid": "signal-safety(7)",
    "kill": "signal-safety(7)",
    "raise": "signal-safety(7)",
    "abort": "signal-safety(7)",
    "_exit": "signal-safety(7)",
    "_Exit": "signal-safety(7)",
    "sigprocmask": "signal-safety(7)",
    "pthread_sigmask": "signal-safety(7)",
    "sigemptyset": "signal-safety(7)",
    "sigfillset": "signal-safety(7)",
    "sigaddset": "signal-safety(7)",
    "sigdelset": "signal-safety(7)",
    "sigismember": "signal-safety(7)",
    # Not on the POSIX list, but in glibc each is one system call and nothing else.
    "clock_getres": "glibc: the vDSO or one system call, like clock_gettime",
    "gettid": "glibc: one system call",
    "mmap": "glibc: one system call (not on the POSIX list)",
    "munmap": "glibc: one system call (not on the POSIX list)",
    "pread": "glibc: one system call, as read (not on the POSIX list; the stamp file's copy)",
    "syscall": "glibc: the raw system call and errno; futex(2) wakes go through it",
    # errno is thread-local; its address is the thread pointer plus a constant.
    "__errno_location": "errno's address (thread-local, no lock)",
    # String and memory functions: on the list since POSIX.1-2016.
    "memchr": "signal-safety(7) (POSIX.1-2016)",
    "memcmp": "signal-safety(7) (POSIX.1-2016)",
    "memcpy": "signal-safety(7) (POSIX.1-2016)",
    "memmove": "signal-safety(7) (POSIX.1-2016)",
    "memset": "signal-safety(7) (POSIX.1-2016)",
    "strchr": "signal-safety(7) (POSIX.1-2016)",
    "strcmp": "signal-safety(7) (POSIX.1-2016)",
    "strlen": "signal-safety(7) (POSIX.1-2016)",
    "strncmp": "signal-safety(7) (POSIX.1-2016)",
    "strnlen": "signal-safety(7) (POSIX.1-2016)",
    # _FORTIFY_SOURCE's checked forms: the function, or __chk_fail (which aborts).
    "__memcpy_chk": "memcpy, or abort (_FORTIFY_SOURCE)",
    "__memmove_chk": "memmove, or abort (_FORTIFY_SOURCE)",
    "__memset_chk": "memset, or abort (_FORTIFY_SOURCE)",
    "__stack_chk_fail": "prints to stderr with write(2) and aborts (the stack protector)",
    # The loader's saved copy of the auxiliary vector: a read-only array, no lock.
    "getauxval": "glibc: reads the loader's saved auxv (no lock, no allocation)",
    # libm: pure arithmetic, marked AS-Safe in the glibc manual; at worst they set errno or
    # an FP exception flag, both per-thread.
    "ceil": "libm: pure arithmetic (AS-Safe in the glibc manual)",
    "ldexp": "libm: pure arithmetic (AS-Safe in the glibc manual; errno is per-thread)",
    "llround": "libm: pure arithmetic (AS-Safe in the glibc manual; errno is per-thread)",
    "nearbyint": "libm: pure arithmetic (AS-Safe in the glibc manual)",
    # libgcc's 128-bit shifts (arm64 has no 128-bit shift instruction; x86-64 inlines
    # them): a few register operations, no memory, no state.
    "__ashlti3": "libgcc: a 128-bit shift, pure arithmetic",
    "__ashrti3": "libgcc: a 128-bit shift, pure arithmetic",
    "__lshrti3": "libgcc: a 128-bit shift, pure arithmetic",
}

# Functions whose indirect calls are calls into the kernel's vDSO (kernel_clock.cc):
# matched on the demangled name, without parameters and clone suffixes.
VDSO_CALLERS = {
    "vclock::kernel::gettime",
    "vclock::kernel::getres",
    "vclock::kernel::gettimeofday",
}
# The variable that holds the vDSO's function pointers (filled only from the vDSO).
VDSO_TABLE = "vclock::kernel::(anonymous namespace)::functions"

# The shim (src/shim/preload.cc): what it exports, the pointers its exported functions jump
# through, and the functions that fill them.
# Exports that are not async-signal-safe by their own contract (not on signal-safety(7)'s
# list), and do something no handler could: the walk starts from them too, and lists what
# only they reach, but does not hold it to the rules above. Every other export is held.
NOT_SIGNAL_SAFE = {
    "timer_create": "not on signal-safety(7)'s list: may start the shim's timer watcher "
                    "thread (docs/virtual-time.md), and finds libc's timer functions",
    "timerfd_create": "Linux's, not on signal-safety(7)'s list: may start the shim's timer "
                      "watcher thread (docs/virtual-time.md), and finds libc's timer functions",
    "pthread_cond_timedwait": "not on signal-safety(7)'s list: called before the shim's "
                              "constructor, it finds libc's function (dlsym)",
    "pthread_cond_clockwait": "not on signal-safety(7)'s list: called before the shim's "
                              "constructor, it finds libc's function (dlsym)",
    "sem_timedwait": "not on signal-safety(7)'s list (sem_post is): called before the shim's "
                     "constructor, it finds libc's function (dlsym)",
    "sem_clockwait": "not on signal-safety(7)'s list (sem_post is): called before the shim's "
                     "constructor, it finds libc's function (dlsym)",
}
SHIM_NS = "vclock::shim::(anonymous namespace)::"
SHIM_TABLES = re.compile(re.escape(SHIM_NS) + r"\w+_target$")
SHIM_NEXT = re.compile(re.escape(SHIM_NS) + r"(next_timespec_get(res)?|real)$")
SHIM_CHOOSERS = re.compile(re.escape(SHIM_NS) + r"(choose|first_\w+)$")


def run(*args):
    return subprocess.run(args, check=True, capture_output=True, text=True).stdout


def fail(msg):
    print(f"check-signal-safety: FAIL: {msg}")
    sys.exit(1)


# --- Sections: their addresses, file offsets and kinds ---------------------------------
sections = []  # (vma, size, file offset, name, flags)
for line in run(OBJDUMP, "-hw", LIB).splitlines():
    f = line.split()
    if len(f) >= 7 and f[0].isdigit():
        sections.append((int(f[3], 16), int(f[2], 16), int(f[5], 16), f[1], line))


def section_of(addr):
    for vma, size, off, name, flags in sections:
        if vma <= addr < vma + size:
            return name, vma, off, flags
    return None


def in_got(addr):
    s = section_of(addr)
    return s is not None and s[0] in (".got", ".got.plt")


def is_rodata(addr):
    s = section_of(addr)
    return s is not None and "READONLY" in s[3] and "CODE" not in s[3] and "CONTENTS" in s[3]


with open(LIB, "rb") as fh:
    image = fh.read()


def read_int(addr, size, signed):
    s = section_of(addr)
    if s is None or section_of(addr + size - 1) != s:
        return None
    pos = s[2] + addr - s[1]
    return int.from_bytes(image[pos:pos + size], "little", signed=signed)


def read_s32(addr):
    return read_int(addr, 4, True)


# --- Symbols ----------------------------------------------------------------------------
defined = {}  # exported name -> (address, nm type)
for line in run(NM, "-D", "--defined-only", LIB).splitlines():
    f = line.split()
    if len(f) == 3:
        defined[f[2].split("@")[0]] = (int(f[0], 16), f[1])

ext_function = set()  # undefined dynamic symbols that are functions (or untyped)
for line in run(OBJDUMP, "-T", LIB).splitlines():
    m = re.match(r"^[0-9a-f]+\s+(.{7})\s+\*UND\*\s+[0-9a-f]+\s+(?:\(\S+\)\s+)?(\S+)$", line)
    if m and "O" not in m.group(1)[5:]:
        ext_function.add(m.group(2))

vdso_table = None  # (start, end)
shim_tables = []  # (start, end, name, why): pointers an indirect branch may go through
for line in run(NM, "-S", "-C", LIB).splitlines():
    m = re.match(r"^([0-9a-f]+) ([0-9a-f]+) \w (.*)$", line)
    if not m:
        continue
    start, end = int(m.group(1), 16), int(m.group(1), 16) + int(m.group(2), 16)
    if m.group(3) == VDSO_TABLE:
        vdso_table = (start, end)
    elif SHIM_TABLES.match(m.group(3)):
        shim_tables.append((start, end, m.group(3), "a chosen entry point (every value is "
                            "walked from the choosers)"))
    elif SHIM_NEXT.match(m.group(3)):
        shim_tables.append((start, end, m.group(3), "libc's own function of the name the "
                            "program called, passed on (the constructor's dlsym(RTLD_NEXT)): "
                            "as safe as libc's"))


def shim_table_at(addr):
    for start, end, name, why in shim_tables:
        if start <= addr < end:
            return name, why
    return None

# Slots the loader fills with an address (the GOT, and pointers in data): slot address ->
# ("sym", name) for a symbol's address, ("addr", a) for an address in the library.
got = {}
tlsdesc = set()  # arm64: the GOT's TLS descriptors (a call through one is global-dynamic TLS)
for line in run(OBJDUMP, "-R", LIB).splitlines():
    f = line.split()
    if len(f) == 3 and re.fullmatch(r"[0-9a-f]+", f[0]):
        slot, rtype, value = int(f[0], 16), f[1], f[2]
        if rtype in ("R_X86_64_RELATIVE", "R_X86_64_IRELATIVE", "R_AARCH64_RELATIVE",
                     "R_AARCH64_IRELATIVE"):
            got[slot] = ("addr", int(value.split("+")[1], 16))
        elif rtype == "R_AARCH64_TLSDESC":
            tlsdesc.add(slot)
        elif rtype in ("R_X86_64_GLOB_DAT", "R_X86_64_JUMP_SLOT", "R_X86_64_64",
                       "R_AARCH64_GLOB_DAT", "R_AARCH64_JUMP_SLOT", "R_AARCH64_ABS64"):
            name = value.split("@")[0]
            if "+" not in value:
                got[slot] = ("sym", name)

# --- The disassembly: functions and their instructions ---------------------------------
PREFIXES = {"notrack", "bnd", "lock", "rep", "repz", "repe", "repnz", "repne",
            "cs", "ds", "es", "ss", "fs", "gs", "data16", "addr32"}

# --- arm64: its instructions in the form the walk reads -----------------------------------
# The walk below was written for x86-64's AT&T disassembly. An arm64 instruction is put in
# that form where the walk looks at it: bl -> call, b -> jmp, b.cond, cbz, cbnz, tbz and tbnz
# -> "j..." (the target alone), blr/br Xn -> call/jmp *%xn, ret -> ret, brk/udf -> ud2,
# mov Xd, Xn -> mov %xn,%xd. An address formed in two steps (adrp Xd, page; add Xd, Xd,
# #lo12, or a load from [Xd, #lo12]) is found by a data flow over the function
# (arm64_addresses, below) and becomes "lea ADDR(%rip),%xd" (an address taken) or "mov
# ADDR(%rip),%xd" (a load from ADDR), as objdump writes x86-64's rip-relative operands.
# Every other instruction keeps its arm64 text; written_arm64 says which registers it writes.
A64_REG = re.compile(r"^[xw](\d+)$")


def a64_reg(op):
    """The 64-bit register family of an arm64 operand (x0..x30; w5 -> x5), or None."""
    m = A64_REG.match(op.strip())
    return "x" + m.group(1) if m else None


def a64_operands(ops):
    out, depth, cur = [], 0, ""
    for ch in ops:
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
            continue
        depth += ch in "[{"
        depth -= ch in "]}"
        cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


def arm64_insn(addr, text):
    text = re.sub(r"\s*//.*$", "", text).strip()
    words = text.split(None, 1)
    mn, ops = words[0], words[1].strip() if len(words) > 1 else ""
    operands = a64_operands(ops)
    if mn == "bl":
        return (addr, "call", ops, None)
    if mn == "b":
        return (addr, "jmp", ops, None)
    if re.fullmatch(r"bc?\.\w+", mn):
        return (addr, "j" + mn.split(".")[1], ops, None)
    if mn in ("cbz", "cbnz", "tbz", "tbnz"):
        return (addr, "j" + mn, operands[-1], None)
    if re.fullmatch(r"blr(aa|ab|aaz|abz)?", mn):
        return (addr, "call", "*%" + operands[0], None)
    if re.fullmatch(r"br(aa|ab|aaz|abz)?", mn):
        return (addr, "jmp", "*%" + operands[0], None)
    if re.fullmatch(r"ret(aa|ab)?|eret\w*", mn):
        return (addr, "ret", "", None)
    if mn in ("brk", "udf"):
        return (addr, "ud2", "", None)
    if (mn == "mov" and len(operands) == 2 and operands[0].startswith("x")
            and operands[1].startswith("x") and a64_reg(operands[0]) and a64_reg(operands[1])):
        return (addr, "mov", f"%{operands[1]},%{operands[0]}", None)
    return (addr, mn, ops, None)


A64_CALL_CLOBBERS = {f"x{n}" for n in range(19)} | {"x30"}  # AAPCS64: x19-x29 are kept
A64_NO_WRITE = re.compile(r"^(cmp|cmn|tst|ccmp|ccmn|fcmp\w*|fccmp\w*|prfm|prfum|dmb|dsb|isb|"
                          r"nop|hint|bti|msr|sev\w*|wf[ei]|yield|paci\w*|auti\w*|xpac\w*)$")
A64_ATOMIC = re.compile(r"^(ld(add|clr|eor|set|smax|smin|umax|umin)\w*|swp\w*|cas\w*)$")


def written_arm64(mn, ops):
    """The register families an arm64 instruction (or its rewritten form) may write."""
    if mn == "call":
        return A64_CALL_CLOBBERS
    if mn in ("jmp", "ret", "ud2") or mn.startswith("j"):
        return set()
    if "%" in ops:  # rewritten: mov/lea SRC,%xD
        return {a64_reg(ops.rsplit("%", 1)[1])} - {None}
    operands = a64_operands(ops)
    out = set()
    mem = [o for o in operands if o.startswith("[")]
    if mem and ("]!" in ops or re.search(r"\], #", ops)):  # pre- or post-index: the base
        out.add(a64_reg(mem[0].strip("[]!").split(",")[0]))
    if A64_NO_WRITE.match(mn) or not operands:
        pass
    elif re.match(r"^st(l?xr|l?xp|lxr\w*|xr\w*)", mn):  # the status register
        out.add(a64_reg(operands[0]))
    elif mn.startswith("st"):
        pass
    elif A64_ATOMIC.match(mn):
        out |= {a64_reg(o) for o in operands if not o.startswith("[")}
    elif re.match(r"^ld\w*p\w*$", mn) and not mn.startswith("ldap"):  # ldp, ldnp, ldxp
        out |= {a64_reg(operands[0]), a64_reg(operands[1]) if len(operands) > 1 else None}
    else:
        out.add(a64_reg(operands[0]))
    return out - {None}


def a64_imm(op):
    m = re.fullmatch(r"#(-?(?:0x[0-9a-f]+|\d+))", op.strip())
    return int(m.group(1), 0) if m else None


def a64_target(op):
    m = re.match(r"^([0-9a-f]+)(\s|$)", op.strip())
    return int(m.group(1), 16) if m else None


funcs = []  # dicts: name, start, section, insns [(addr, mnemonic, operands, comment addr)]
section = None
for line in run(OBJDUMP, "-dw", "--no-show-raw-insn",
                *(["-M", "att"] if ARCH == "x86_64" else []), LIB).splitlines():
    m = re.match(r"^Disassembly of section (\S+):$", line)
    if m:
        section = m.group(1)
        continue
    m = re.match(r"^([0-9a-f]+) <(.+)>:$", line)
    if m:
        funcs.append({"name": m.group(2), "start": int(m.group(1), 16), "section": section,
                      "insns": []})
        continue
    m = re.match(r"^\s+([0-9a-f]+):\t(.*)$", line)
    if not m or not funcs:
        continue
    text, comment = m.group(2), None
    if ARCH == "arm64":
        funcs[-1]["insns"].append(arm64_insn(int(m.group(1), 16), text))
        continue
    c = re.match(r"^(.*?)\s*#\s*([0-9a-f]+)(?: <.*>)?\s*$", text)
    if c:
        text, comment = c.group(1), int(c.group(2), 16)
    words = text.split(None, 1)
    while words and words[0] in PREFIXES:
        words = words[1].split(None, 1) if len(words) > 1 else []
    if not words:
        continue
    mnemonic = re.sub(r"^(call|jmp|ret)q$", r"\1", words[0])
    funcs[-1]["insns"].append((int(m.group(1), 16), mnemonic,
                               words[1].strip() if len(words) > 1 else "", comment))

funcs.sort(key=lambda f: f["start"])
starts = [f["start"] for f in funcs]


def func_at(addr):
    """The index of the function whose code contains addr, or None."""
    i = bisect.bisect_right(starts, addr) - 1
    if i < 0:
        return None
    s = section_of(addr)
    if s is None or s[0] != funcs[i]["section"]:
        return None
    return i


names = [f["name"] for f in funcs]
proc = subprocess.run(["c++filt"], input="\n".join(names) + "\n", capture_output=True,
                      text=True, check=True)
pretty = proc.stdout.splitlines()
if len(pretty) != len(names):
    pretty = names


def base_name(i):
    """The qualified name alone (no return type, parameters or clone suffix): for VDSO_CALLERS."""
    n = re.sub(r"( \[clone [^]]*\])+$", "", pretty[i]).replace("(anonymous namespace)", "\0")
    angle, cut, space = 0, len(n), -1
    for pos, ch in enumerate(n):
        angle += (ch == "<") - (ch == ">")
        if angle == 0 and ch == "(" and not n[:pos].endswith("operator"):
            cut = pos
            break
        if angle == 0 and ch == " ":
            space = pos
    return n[space + 1:cut].replace("\0", "(anonymous namespace)")


def parts_of(i):
    """A function and its .cold part(s): a jump table may land in either."""
    stem = re.sub(r"\.cold(\.\d+)?$", "", names[i])
    return {j for j, n in enumerate(names) if re.sub(r"\.cold(\.\d+)?$", "", n) == stem}


def is_plt(i):
    return funcs[i]["section"].startswith(".plt")


def external_name(i):
    return re.sub(r"@plt$", "", names[i]).split("@")[0]


# --- Registers, for the vDSO rule ----------------------------------------------------------
def reg_family(reg):
    reg = reg.lstrip("%")
    if ARCH == "arm64":
        return a64_reg(reg)
    m = re.fullmatch(r"r(\d+)[dwb]?", reg)
    if m:
        return "r" + m.group(1)
    m = re.fullmatch(r"[re]?([abcd])[xlh]|[re]?(si|di|bp|sp)l?", reg)
    if m:
        return "r" + (m.group(1) + "x" if m.group(1) else m.group(2))
    return None


def split_operands(ops):
    out, depth, cur = [], 0, ""
    for ch in ops:
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
            continue
        depth += ch == "("
        depth -= ch == ")"
        cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


# Instructions that write registers they do not name as their last operand.
IMPLICIT_WRITERS = re.compile(
    r"^(cpuid|rdtscp?|rdpid|syscall|mul|div|idiv|imul|cltq|cqto|cltd|cwtl|cwtd|xchg|xadd|"
    r"cmpxchg\w*|lods\w*|stos\w*|movs[bwlq]?|scas\w*|cmps[bwlq]?|pop\w*|leave|xgetbv|rdrand|"
    r"rdseed|enter)$")
NON_WRITERS = re.compile(r"^(test|cmp|bt|ucomis|comis|ptest|vptest)\w*$")

entered_from_outside = set()  # addresses a direct branch of another function goes to
for f in funcs:
    for addr, mn, ops, comment in f["insns"]:
        m = re.match(r"^([0-9a-f]+) <", ops)
        if m and (mn in ("call", "jmp") or mn.startswith("j") or mn.startswith("loop")):
            target = int(m.group(1), 16)
            if not f["start"] <= target <= f["insns"][-1][0]:
                entered_from_outside.add(target)


_addr_states = {}


def arm64_addresses(i):
    """A forward data flow over arm64 function i: which registers hold an address the
    function formed itself (adrp, adr, add of an immediate to one), on every path (paths
    join by union; anything else that writes a register forgets it). Rewrites each add
    that forms one known address into "lea", and each load from one known address into
    "mov ADDR(%rip)", with the address as the comment (see above). Returns the state
    before each instruction: register family -> frozenset of addresses."""
    insns = funcs[i]["insns"]
    index_of = {addr: k for k, (addr, _, _, _) in enumerate(insns)}
    state = [None] * len(insns)
    work = []

    def merge(k, incoming):
        if state[k] is None:
            state[k] = dict(incoming)
        else:
            joined = {r: state[k][r] | incoming[r] for r in state[k]
                      if r in incoming and len(state[k][r] | incoming[r]) <= 8}
            if joined == state[k]:
                return
            state[k] = joined
        work.append(k)

    def next_of(k):  # successors without the jump tables (found with this pass's result)
        addr, mn, ops, _ = insns[k]
        out = [] if mn in NO_FALLTHROUGH else [k + 1]
        t = a64_target(ops) if mn == "jmp" or re.match(r"^j\w+$", mn) else None
        if t is not None:
            out.append(index_of.get(t))
        return [s_ for s_ in out if s_ is not None and s_ < len(insns)]

    for k, (addr, _, _, _) in enumerate(insns):
        if k == 0 or addr in entered_from_outside:
            merge(k, {})
    unreached = 0
    while True:
        if not work:
            # What no branch this pass follows reaches (a jump table's targets) starts
            # knowing nothing.
            while unreached < len(insns) and state[unreached] is not None:
                unreached += 1
            if unreached == len(insns):
                break
            merge(unreached, {})
        k = work.pop()
        addr, mn, ops, _ = insns[k]
        out = dict(state[k])
        value = None
        operands = a64_operands(ops)
        if mn in ("adrp", "adr") and len(operands) == 2:
            t = a64_target(operands[1])
            value = frozenset([t]) if t is not None else None
        elif mn == "add" and len(operands) == 3 and a64_imm(operands[2]) is not None:
            base = state[k].get(a64_reg(operands[1])) if operands[1].startswith("x") else None
            if base is not None:
                value = frozenset(b + a64_imm(operands[2]) for b in base)
                if len(value) > 8:  # a pointer stepped through a loop: not one address
                    value = None
        elif mn == "mov" and "%" in ops:
            value = state[k].get(a64_reg(ops.split(",")[0].lstrip("%")))
        for fam in written_arm64(mn, ops):
            out.pop(fam, None)
        if value is not None and operands and a64_reg(operands[0] if "%" not in ops
                                                      else ops.rsplit("%", 1)[1]):
            out[a64_reg(operands[0] if "%" not in ops else ops.rsplit("%", 1)[1])] = value
        for s_ in next_of(k):
            merge(s_, out)
    states = [st if st is not None else {} for st in state]
    for k, (addr, mn, ops, _) in enumerate(insns):
        operands = a64_operands(ops)
        if "%" in ops or not operands or not operands[0].startswith("x"):
            continue
        dst = operands[0]
        if mn == "adr" and len(operands) == 2 and a64_target(operands[1]) is not None:
            insns[k] = (addr, "lea", f"{a64_target(operands[1]):#x}(%rip),%{dst}",
                        a64_target(operands[1]))
        elif mn == "add" and len(operands) == 3 and a64_imm(operands[2]) is not None:
            base = states[k].get(a64_reg(operands[1])) if operands[1].startswith("x") else None
            if base is not None and len(base) == 1:
                a = next(iter(base)) + a64_imm(operands[2])
                insns[k] = (addr, "lea", f"{a:#x}(%rip),%{dst}", a)
        elif mn == "ldr" and len(operands) == 2:
            m = re.fullmatch(r"\[(x\d+)(?:, (#[-0-9a-fx]+))?\]", operands[1])
            t = a64_target(operands[1])
            if m:
                base = states[k].get(a64_reg(m.group(1)))
                if base is not None and len(base) == 1:
                    a = next(iter(base)) + (a64_imm(m.group(2)) if m.group(2) else 0)
                    insns[k] = (addr, "mov", f"{a:#x}(%rip),%{dst}", a)
            elif t is not None:  # a literal load: ldr Xd, ADDR
                insns[k] = (addr, "mov", f"{t:#x}(%rip),%{dst}", t)
    _addr_states[i] = states
    return states


A64_WIDTH = {"x": 8, "w": 4, "q": 16, "d": 8, "s": 4, "h": 2, "b": 1}


def a64_loaded_slots(i, k):
    """The relocated slots (the GOT, pointers in data) that the arm64 load funcs[i]["insns"][k]
    reads, where its base register holds an address the function formed."""
    _, mn, ops, _ = funcs[i]["insns"][k]
    operands = a64_operands(ops)
    mem = [n for n, o in enumerate(operands) if o.startswith("[")]
    if not mem:
        return []
    m = re.fullmatch(r"\[(x\d+)(?:, (#[-0-9a-fx]+))?\]!?", operands[mem[0]])
    if not m:
        return []
    bases = _addr_states[i][k].get(a64_reg(m.group(1)))
    if not bases:
        return []
    offset = a64_imm(m.group(2)) if m.group(2) else 0
    size = sum(A64_WIDTH.get(o[:1], 8) for o in operands[:mem[0]])
    return sorted(slot for b in bases for slot in got
                  if b + offset <= slot < b + offset + max(size, 8))


def jump_table_arm64(i, insns, k, reg):
    """The targets of a switch's jump table behind br reg: GCC's "ldrb/ldrh wE, [xT, wI,
    uxtw...]; adr xL, L; add reg, xL, wE, sxtb/uxtb/sxth/uxth #2; br reg": each entry, one
    or two bytes, is the distance from L in instructions. Entries are read until the first
    that lands outside the function (and its .cold part): as on x86-64, the table's size is
    the compiler's bound check, which this trusts."""
    if k < 1:
        return None
    _, mn, ops, _ = insns[k - 1]
    operands = a64_operands(ops)
    if mn != "add" or len(operands) != 4 or "%" + operands[0] != reg:
        return None
    m = re.fullmatch(r"([su])xt([bh]) #2", operands[3])
    if not m:
        return None
    signed, size = m.group(1) == "s", 1 if m.group(2) == "b" else 2
    states = _addr_states.get(i) or arm64_addresses(i)
    base = states[k - 1].get(a64_reg(operands[1]))
    entry_reg = a64_reg(operands[2])
    if base is None or len(base) != 1:
        return None
    label = next(iter(base))
    table = None
    for j in range(k - 2, max(-1, k - 10), -1):
        _, mn2, ops2, _ = insns[j]
        o2 = a64_operands(ops2)
        if "%" not in ops2 and o2 and a64_reg(o2[0]) == entry_reg:
            if mn2 != ("ldrb" if size == 1 else "ldrh") or len(o2) != 2:
                return None
            mm = re.fullmatch(r"\[(x\d+), w\d+, uxtw(?: #1)?\]", o2[1])
            t = states[j].get(a64_reg(mm.group(1))) if mm else None
            if t is None or len(t) != 1 or not is_rodata(next(iter(t))):
                return None
            table = next(iter(t))
            break
    if table is None:
        return None
    parts = parts_of(i)
    targets = []
    entry = table
    while True:
        e = read_int(entry, size, signed)
        if e is None:
            break
        t = func_at(label + 4 * e)
        if t is None or t not in parts:
            break
        targets.append(label + 4 * e)
        entry += size
    return targets or None

CALLER_SAVED = {"rax", "rcx", "rdx", "rsi", "rdi", "r8", "r9", "r10", "r11"}
# What an instruction of IMPLICIT_WRITERS may write besides its operands (cpuid: rbx too).
IMPLICIT_CLOBBERS = {"rax", "rbx", "rcx", "rdx", "rsi", "rdi", "r11"}
NO_FALLTHROUGH = {"jmp", "ret", "ud2", "hlt"}


def is_reg64(operand):
    if ARCH == "arm64":
        return re.fullmatch(r"%x\d+", operand) is not None
    return re.fullmatch(r"%r(\d+|[abcd]x|si|di|bp|sp)", operand) is not None


def written(mn, operands):
    """The register families an instruction may write (rsp not tracked)."""
    if ARCH == "arm64":
        return written_arm64(mn, ", ".join(operands) if "%" not in "".join(operands)
                             else ",".join(operands))
    if mn == "call":
        return CALLER_SAVED  # the ABI: a callee keeps rbx, rbp, r12-r15
    if mn.startswith("push") or NON_WRITERS.match(mn) or not operands:
        return set()
    regs = {reg_family(o) for o in operands if o.startswith("%")} - {None}
    if mn.startswith("pop"):
        return regs
    if IMPLICIT_WRITERS.match(mn):
        return IMPLICIT_CLOBBERS | regs
    last = operands[-1]
    return {reg_family(last)} - {None} if last.startswith("%") else set()


def successors(i, k, index_of):
    """The instructions of function i that may run after its k-th one."""
    addr, mn, ops, _ = funcs[i]["insns"][k]
    out = [] if mn in NO_FALLTHROUGH else [k + 1]
    m = re.match(r"^([0-9a-f]+) <", ops)
    if m and (mn == "jmp" or re.match(r"^(j\w+|loop\w*|xbegin)$", mn)):
        out.append(index_of.get(int(m.group(1), 16)))
    elif mn == "jmp" and ops.startswith("*%"):
        out.extend(index_of.get(t) for t in jump_table(i, funcs[i]["insns"], k, ops[1:]) or [])
    return [s for s in out if s is not None and s < len(funcs[i]["insns"])]


_sources = {}


def register_sources(i):
    """For each instruction of function i: what each register may hold on entry to it, on
    every path through the function (a forward data flow): a set of ("slot", a), the value
    loaded from the rip-relative address a ("mov a(%rip),%reg"), and ("code", f), the
    address of the library's function f ("lea f(%rip),%reg"); copied by mov, joined by
    cmov; nothing known after anything else writes it. Paths join by union; the entry, and
    an address other functions (a .cold part) branch to, know nothing."""
    if i in _sources:
        return _sources[i]
    insns = funcs[i]["insns"]
    index_of = {addr: k for k, (addr, _, _, _) in enumerate(insns)}
    state = [None] * len(insns)
    work = []

    def merge(k, incoming):
        if state[k] is None:
            state[k] = dict(incoming)
        else:
            joined = {r: state[k][r] | incoming[r] for r in state[k] if r in incoming}
            if joined == state[k]:
                return
            state[k] = joined
        work.append(k)

    for k, (addr, _, _, _) in enumerate(insns):
        if k == 0 or addr in entered_from_outside:
            merge(k, {})
    while work:
        k = work.pop()
        addr, mn, ops, comment = insns[k]
        out = dict(state[k])
        operands = split_operands(ops)
        for fam in written(mn, operands):
            out.pop(fam, None)
        if ARCH == "arm64" and mn == "csel" and a64_operands(ops)[0].startswith("x"):
            operands = ["", "%" + a64_operands(ops)[0]]  # the destination, for the rule below
        if len(operands) == 2 and is_reg64(operands[1]):
            dst, src = reg_family(operands[1]), operands[0]
            value = None
            if mn == "lea" and comment is not None and func_at(comment) is not None:
                value = frozenset([("code", comment)])
            elif src.endswith("(%rip)") and comment is not None:
                value = frozenset([("slot", comment)])
            elif is_reg64(src):
                value = state[k].get(reg_family(src))
            if ARCH == "arm64" and mn == "csel":  # csel xD, xA, xB, cond: one or the other
                both = [state[k].get(a64_reg(o)) for o in a64_operands(ops)[1:3]]
                value = both[0] | both[1] if None not in both else None
                if value is not None:
                    out[dst] = value
            elif value is not None and mn in ("mov", "movq", "lea"):
                out[dst] = value
            elif value is not None and mn.startswith("cmov") and dst in state[k]:
                out[dst] = state[k][dst] | value  # one or the other
        for s in successors(i, k, index_of):
            merge(s, out)
    _sources[i] = [st if st is not None else {} for st in state]
    return _sources[i]


def register_load(i, k, reg):
    """What the register of the indirect branch funcs[i]["insns"][k] may hold (see
    register_sources), or None if some path gives it another value."""
    fam = reg_family(reg)
    return register_sources(i)[k].get(fam) if fam is not None else None


def jump_table(i, insns, k, reg):
    """The targets of a switch's jump table behind jmp *reg, or None if it is not one."""
    if ARCH == "arm64":
        return jump_table_arm64(i, insns, k, reg)
    if k < 1:
        return None
    _, mn, ops, _ = insns[k - 1]
    operands = split_operands(ops)
    if mn != "add" or len(operands) != 2 or operands[1] != reg:
        return None
    table_reg = operands[0]
    for j in range(k - 2, max(-1, k - 10), -1):
        _, mn2, ops2, comment = insns[j]
        o2 = split_operands(ops2)
        if len(o2) == 2 and o2[1] == table_reg:
            if mn2 != "lea" or not o2[0].endswith("(%rip)") or comment is None:
                return None
            if not is_rodata(comment):
                return None
            parts = parts_of(i)
            targets = []
            entry = comment
            while True:
                off = read_s32(entry)
                if off is None:
                    break
                t = func_at(comment + off)
                if t is None or t not in parts:
                    break
                targets.append(comment + off)
                entry += 4
            return targets or None
    return None


def slot_reason(slot):
    """Why an indirect branch through a pointer loaded from `slot` is safe, or None."""
    if vdso_table is not None and vdso_table[0] <= slot < vdso_table[1]:
        return f"a vDSO call (pointer loaded from {VDSO_TABLE})"
    if shim_table_at(slot):
        name, why = shim_table_at(slot)
        return f"{why}: loaded from {name}"
    return None


if ARCH == "arm64":
    for i_ in range(len(funcs)):
        if funcs[i_]["insns"] and not is_plt(i_):
            arm64_addresses(i_)

# --- The graph -----------------------------------------------------------------------------
# edges[i]: list of (kind, target) with target ("f", index) or ("x", external name);
# kind "-->" (call or jump) or "&->" (address taken).
edges = [[] for _ in funcs]
indirect_ok = [[] for _ in funcs]   # (addr, text, why)
indirect_bad = [[] for _ in funcs]  # (addr, text)


def local_or_external(name):
    """A symbol a PLT or GOT slot names: the library's own function, or an external one.
    A slot of the library's own GNU ifunc (R_X86_64_IRELATIVE, "*ABS*+0xADDR") names its
    resolver, which takes the address of every variant it may choose."""
    m = re.fullmatch(r"\*ABS\*\+(0x[0-9a-f]+)", name)
    if m and func_at(int(m.group(1), 16)) is not None:
        return ("f", func_at(int(m.group(1), 16)))
    if name in defined:
        j = func_at(defined[name][0])
        if j is not None:
            return ("f", j)
    return ("x", name)


def target_of_address(addr):
    j = func_at(addr)
    if j is None:
        return None
    if is_plt(j):
        return local_or_external(external_name(j))
    return ("f", j)


for i, f in enumerate(funcs):
    if is_plt(i):
        continue
    insns = f["insns"]
    for k, (addr, mn, ops, comment) in enumerate(insns):
        text = f"{mn} {ops}".strip()
        is_branch = mn in ("call", "jmp") or re.match(r"^(j\w+|loop\w*|xbegin)$", mn)
        if is_branch and ops.startswith("*"):
            operand = ops[1:]
            if operand.endswith("(%rip)") and comment is not None and shim_table_at(comment):
                name, why = shim_table_at(comment)
                indirect_ok[i].append((addr, text, f"{why}: through {name}"))
                continue
            if operand.endswith("(%rip)") and comment is not None and in_got(comment):
                # call *foo@GOTPCREL(%rip): the GOT is read-only after relocation (RELRO)
                slot = got.get(comment)
                if slot and slot[0] == "sym":
                    edges[i].append(("-->", local_or_external(slot[1])))
                    continue
                if slot and slot[0] == "addr" and target_of_address(slot[1]):
                    edges[i].append(("-->", target_of_address(slot[1])))
                    continue
            if operand.startswith("%"):
                if base_name(i) in VDSO_CALLERS:
                    indirect_ok[i].append((addr, text, "a vDSO call (an allowed caller)"))
                    continue
                values = sorted(register_load(i, k, operand) or [])
                reasons = [slot_reason(v) if kind == "slot" else "the address of a function "
                           "of the library, walked" for kind, v in values]
                if reasons and all(reasons):
                    for kind, v in values:
                        if kind == "code" and func_at(v) != i:
                            edges[i].append(("-->", ("f", func_at(v))))
                    indirect_ok[i].append((addr, text, "; ".join(sorted(set(reasons)))))
                    continue
                if mn == "jmp":
                    targets = jump_table(i, insns, k, operand)
                    if targets:
                        for t in sorted({func_at(t) for t in targets} - {i}):
                            edges[i].append(("-->", ("f", t)))
                        indirect_ok[i].append((addr, text, f"a jump table of {len(targets)} "
                                               "entries, all in the function"))
                        continue
            if operand.startswith("%") and any(
                    kind == "slot" and v in tlsdesc for kind, v in register_load(i, k, operand)
                    or []):
                text += " (a TLS descriptor's call: a thread_local of the global-dynamic model)"
            indirect_bad[i].append((addr, text))
            continue
        if is_branch:
            m = re.match(r"^([0-9a-f]+) <", ops)
            if not m:
                indirect_bad[i].append((addr, text))
                continue
            t = target_of_address(int(m.group(1), 16))
            if t is None:
                indirect_bad[i].append((addr, text + " (target outside any function)"))
            elif t != ("f", i):
                edges[i].append(("-->", t))
            continue
        if ARCH == "arm64" and "%" not in ops and mn.startswith("ld"):
            # A load from an address the function formed (ldp q0, q1, [x0]: a table of
            # function pointers copied whole): every relocated slot it reads is taken.
            for slot in a64_loaded_slots(i, k):
                kind_, value_ = got[slot]
                t = (local_or_external(value_) if kind_ == "sym" else target_of_address(value_))
                if t is not None and t != ("f", i) and (t[0] == "f" or t[1] in ext_function):
                    edges[i].append(("&->", t))
            continue
        if comment is None or "(%rip)" not in ops:
            continue
        if mn == "lea":
            t = target_of_address(comment)
            if t is not None and t != ("f", i):
                edges[i].append(("&->", t))
        elif comment in got:
            slot = got[comment]
            if slot[0] == "sym":
                t = local_or_external(slot[1])
                if t[0] == "f" or t[1] in ext_function:
                    edges[i].append(("&->", t))
            else:
                t = target_of_address(slot[1])
                if t is not None:
                    edges[i].append(("&->", t))

# --- Roots and the walk ------------------------------------------------------------------
roots = []  # (exported name, function index)
for name, (addr, kind) in sorted(defined.items()):
    if kind.upper() not in ("T", "I", "W"):  # code: T (text), i (GNU ifunc), W (weak)
        continue
    j = func_at(addr)
    if j is None:
        fail(f"entry point {name} at {addr:#x} is not in any function of the disassembly")
    roots.append((name, j))
if not roots:
    fail(f"no function exported by {SHOWN}")
for j in range(len(funcs)):
    chooser = base_name(j)
    if SHIM_CHOOSERS.match(chooser) and not is_plt(j):
        defined.setdefault(chooser, (funcs[j]["start"], "t"))
        roots.append((chooser, j))
held_roots = [(name, j) for name, j in roots if name not in NOT_SIGNAL_SAFE]
exempt_roots = [(name, j) for name, j in roots if name in NOT_SIGNAL_SAFE]

# Breadth first, so that each node's chain is a shortest one: first from the roots that are
# held to the rules, then on from the exempt ones (what only they reach).
parent = {}  # node -> (previous node, kind); nodes are ("f", i) or ("x", name)
root_label = {}


def walk(from_roots):
    queue = deque()
    for name, j in from_roots:
        node = ("f", j)
        if node not in parent:
            parent[node] = None
            root_label[node] = name
            queue.append(node)
    while queue:
        node = queue.popleft()
        if node[0] != "f":
            continue
        for kind, t in edges[node[1]]:
            if t not in parent:
                parent[t] = (node, kind)
                queue.append(t)
    return set(parent)


held = walk(held_roots)
exempt_only = walk(exempt_roots) - held


def show(node):
    if node[0] == "x":
        return demangle_one(node[1])
    return pretty[node[1]]


_demangled = {}


def demangle_one(name):
    if name not in _demangled:
        _demangled[name] = subprocess.run(["c++filt", name], capture_output=True, text=True,
                                          check=True).stdout.strip()
    return _demangled[name]


def chain(node):
    hops = []
    while parent[node] is not None:
        prev, kind = parent[node]
        hops.append(f"      {kind} {show(node)}")
        node = prev
    name = root_label[node]
    head = f"      {name}"
    if defined[name][1] == "i":
        head += f" (GNU ifunc; its resolver is {show(node)})"
    elif show(node) != name:
        head += f" ({show(node)})"
    return [head] + hops[::-1]


reached = sorted((n for n in held if n[0] == "f"), key=lambda n: funcs[n[1]]["start"])
externals = sorted((n for n in held if n[0] == "x"), key=lambda n: show(n).lower())
bad_externals = [n for n in externals if n[1] not in ALLOWED]
bad_indirect = [n for n in reached if indirect_bad[n[1]]]
print(f"check-signal-safety: {SHOWN}: {len(roots)} entry points "
      f"({', '.join(n for n, _ in roots)}); {len(reached)} functions and "
      f"{len(externals)} external functions reachable")
for name, _ in exempt_roots:
    print(f"  not held  {name}: {NOT_SIGNAL_SAFE[name]}")
if exempt_roots:
    only = sorted(show(n) for n in exempt_only if n[0] == "x")
    print(f"  not held  what only those reach: "
          f"{len([n for n in exempt_only if n[0] == 'f'])} functions, and "
          f"{', '.join(only) if only else 'no external function'}")
for node in externals:
    if node[1] in ALLOWED:
        print(f"  ok    {show(node)}: {ALLOWED[node[1]]}")
        print("\n".join(chain(node)))
for node in reached:
    for addr, text, why in indirect_ok[node[1]]:
        print(f"  ok    {text} at {addr:#x} in {show(node)}: {why}")
for node in bad_externals:
    print(f"  FAIL  {show(node)}: not async-signal-safe (not on the allow-list)")
    print("\n".join(chain(node)))
for node in bad_indirect:
    branches = ", ".join(f"{text} at {addr:#x}" for addr, text in indirect_bad[node[1]])
    print(f"  FAIL  {show(node)}: indirect branch(es) to unknown targets (not a vDSO "
          f"call, a jump table or a shim table): {branches}")
    print("\n".join(chain(node)))
if bad_externals or bad_indirect:
    print(f"check-signal-safety: FAIL: the entry points reach {len(bad_externals)} external "
          f"function(s) that are not async-signal-safe and {len(bad_indirect)} function(s) "
          "with unknown indirect branches")
    sys.exit(1)
print("check-signal-safety: ok: every external function the entry points reach is "
      "async-signal-safe, and every indirect branch is a vDSO call, a jump table or (the "
      "shim) a chosen entry point")
PYTHON
