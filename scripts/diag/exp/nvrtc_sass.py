#!/usr/bin/env python3
"""Compile a CUDA source with NVRTC for sm_90 and disassemble the cubin (no GPU needed): OUT.cubin, OUT.sass, and
the resource usage printed. `--fixed HASH ENTRY` compiles the interpreter source with one plan-specialised program
of the embedded header (FIXED_HDR, default mscclpp-sys/cuda/include/mscclpp/interp_fixed.hpp) as its only entry
point, e.g. `--fixed 436f0254e32ba1e9 f32_ll16`.

Needs libnvrtc (LD_LIBRARY_PATH: the nvidia-cuda-nvrtc wheel's lib folder) and nvdisasm/cuobjdump (NVDISASM_BIN:
the bin folder of the PyPI wheels nvidia-cuda-nvdisasm and nvidia-cuda-cuobjdump, 13.2 or later read sm_90 cubins).

usage: nvrtc_sass.py SOURCE OUT [--fixed HASH ENTRY] [NVRTC_OPTION...]"""
import ctypes, ctypes.util, os, pathlib, re, subprocess, sys, tempfile

root = pathlib.Path(__file__).resolve().parents[3]
args = sys.argv[1:]
src, out, rest = pathlib.Path(args[0]), args[1], args[2:]
opts = ['--gpu-architecture=sm_90', '-std=c++17', '-DMSCCLPP_DEVICE_COMPILE=1', '-lineinfo',
        '--include-path=' + str(root / 'mscclpp-sys/cuda/include')]
inc = pathlib.Path(tempfile.mkdtemp(prefix='mscclpp-sass-'))
while rest:
    a = rest.pop(0)
    if a != '--fixed':
        opts.append(a)
        continue
    h, entry = rest.pop(0), rest.pop(0)
    fx = pathlib.Path(os.environ.get('FIXED_HDR', root / 'mscclpp-sys/cuda/include/mscclpp/interp_fixed.hpp')).read_text()
    prog = re.search(r'(// [^\n]*\n)?struct FixedProgram_%s \{.*?\n\};\n' % h, fx, re.S)
    line = [l for l in fx.splitlines() if l.startswith('MSCCLPP_FIXED_KERNEL(mscclpp_fixed_%s_%s,' % (h, entry))]
    if not prog or not line:
        sys.exit('no program %s with entry point %s in the header' % (h, entry))
    (inc / 'mscclpp').mkdir()
    (inc / 'mscclpp/interp_fixed_one.hpp').write_text(
        '#pragma once\n#if defined(MSCCLPP_INTERPRETER)\nnamespace mscclpp {\nnamespace interp {\n' + prog.group(0) +
        '}\n}\n' + line[0] + '\n#endif\n')
    opts += ['-DMSCCLPP_FIXED_ONLY', '--include-path=' + str(inc)]
nvrtc = ctypes.CDLL(ctypes.util.find_library('nvrtc') or 'libnvrtc.so.13')
prog = ctypes.c_void_p()
if nvrtc.nvrtcCreateProgram(ctypes.byref(prog), src.read_bytes(), src.name.encode(), 0, None, None) != 0:
    sys.exit('nvrtcCreateProgram failed')
copts = (ctypes.c_char_p * len(opts))(*[o.encode() for o in opts])
rc = nvrtc.nvrtcCompileProgram(prog, len(opts), copts)
size = ctypes.c_size_t()
nvrtc.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
log = ctypes.create_string_buffer(size.value)
nvrtc.nvrtcGetProgramLog(prog, log)
if rc != 0:
    sys.exit(log.value.decode())
nvrtc.nvrtcGetCUBINSize(prog, ctypes.byref(size))
cubin = ctypes.create_string_buffer(size.value)
nvrtc.nvrtcGetCUBIN(prog, cubin)
pathlib.Path(out + '.cubin').write_bytes(cubin.raw)
bin_dir = pathlib.Path(os.environ.get('NVDISASM_BIN', '/usr/local/cuda/bin'))
sass = subprocess.run([str(bin_dir / 'nvdisasm'), '-c', '-g', out + '.cubin'], capture_output=True, text=True)
pathlib.Path(out + '.sass').write_text(sass.stdout + sass.stderr)
usage = subprocess.run([str(bin_dir / 'cuobjdump'), '-res-usage', out + '.cubin'], capture_output=True, text=True)
print(usage.stdout.strip())
