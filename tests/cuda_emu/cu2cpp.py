#!/usr/bin/env python3
"""Turns the CUDA backend's sources into C++ that g++ compiles against the
host emulator in shim/ (tests/cuda_emu/README.md). Python 3 standard library
only; run by CMake at build time, so the CURRENT sources are what is tested.

  cu2cpp.py --src DIR --out DIR [--extract FILE:FUNCTION]... NAME...

Each NAME (a .cu or .cuh file of --src) is written to OUT/backend/cuda/NAME,
with ".cpp" appended to .cu files, after these rewrites (line numbers are kept,
and a #line directive names the original file, so diagnostics point at it):

  kernel<...><<<grid, block[, smem[, stream]]>>>(args)
      -> emu_launch("kernel<...>", kernel<...>, emu_cfg(grid, block, ...), args)
  __shared__ T name[N];   (in a function)
      -> the same, then emu_shared_fresh(&name, sizeof name): poisons the
         array when a new block starts (stale values of the previous block
         can't pass for data this block wrote)
  extern __shared__ T name[];
      -> T *const name = (T *)emu_dynamic_shared();

and every __global__ function is registered by name (emu_kernel_registrar)
so that the test can list the kernels it never launched.

--extract FILE:FUNCTION copies one function definition of FILE (found by its
name at the start of a line, braces matched) into OUT/backend/cuda/FILE.FUNCTION.cpp:
for host helpers that live in files the emulator does not compile whole
(ctc_ew_init of device.cu, next to the runtime calls of device management).
"""
import argparse
import os
import re
import sys


class TranslateError(Exception):
    pass


def code_mask(text):
    """A copy of text with comments, string and character literals blanked
    (same length, newlines kept): searches on it see code only."""
    out = list(text)
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith('//', i):
            j = text.find('\n', i)
            j = n if j < 0 else j
            for k in range(i, j):
                out[k] = ' '
            i = j
        elif text.startswith('/*', i):
            j = text.find('*/', i + 2)
            j = n if j < 0 else j + 2
            for k in range(i, j):
                if out[k] != '\n':
                    out[k] = ' '
            i = j
        elif c == '"' or c == "'":
            # raw strings R"(...)" are not used by the sources; plain literals only
            j = i + 1
            while j < n and text[j] != c:
                if text[j] == '\\':
                    j += 1
                elif text[j] == '\n':
                    break
                j += 1
            for k in range(i + 1, min(j, n)):
                if out[k] != '\n':
                    out[k] = ' '
            i = j + 1
        else:
            i += 1
    return ''.join(out)


def match_forward(mask, i, open_c, close_c):
    """Index just past the bracket closing the one at mask[i]."""
    depth = 0
    for j in range(i, len(mask)):
        if mask[j] == open_c:
            depth += 1
        elif mask[j] == close_c:
            depth -= 1
            if depth == 0:
                return j + 1
    raise TranslateError('unbalanced %s%s' % (open_c, close_c))


def kernel_start(mask, end):
    """Start of the kernel expression ending at end (exclusive): an
    identifier, possibly qualified (a::b), possibly with template arguments."""
    j = end
    while j > 0 and mask[j - 1].isspace():
        j -= 1
    if j > 0 and mask[j - 1] == '>':  # template arguments: match <...> backwards
        depth = 0
        k = j - 1
        while k >= 0:
            if mask[k] == '>':
                depth += 1
            elif mask[k] == '<':
                depth -= 1
                if depth == 0:
                    break
            elif mask[k] in ';{}':
                raise TranslateError('cannot parse the kernel name before <<<')
            k -= 1
        j = k
        while j > 0 and mask[j - 1].isspace():
            j -= 1
    k = j
    while k > 0 and (mask[k - 1].isalnum() or mask[k - 1] in '_:'):
        k -= 1
    if k == j:
        raise TranslateError('no kernel name before <<<')
    return k


def rewrite_launches(text):
    """kernel<<<cfg>>>(args) -> emu_launch("kernel", kernel, emu_cfg(cfg), args)."""
    mask = code_mask(text)
    out, pos, count = [], 0, 0
    for m in re.finditer(r'<<<', mask):
        if m.start() < pos:
            continue
        ks = kernel_start(mask, m.start())
        ce = mask.find('>>>', m.end())
        if ce < 0:
            raise TranslateError('<<< without >>>')
        j = ce + 3
        while j < len(mask) and mask[j].isspace():
            j += 1
        if j >= len(mask) or mask[j] != '(':
            raise TranslateError('no argument list after >>>')
        ae = match_forward(mask, j, '(', ')')
        kernel = text[ks:m.start()].rstrip()
        cfg = text[m.end():ce]
        args = text[j + 1:ae - 1]
        name = ' '.join(mask[ks:m.start()].split())
        gap = text[ks + len(kernel):m.start()]  # whitespace, newlines kept
        nls = '\n' * text.count('\n', ce, j + 1)
        out.append(text[pos:ks])
        out.append('emu_launch("%s", %s%s, emu_cfg(%s)%s%s%s)' %
                   (name, kernel, gap, cfg, ', ' if args.strip() else '', nls, args))
        pos = ae
        count += 1
    out.append(text[pos:])
    return ''.join(out), count


SHARED_RE = re.compile(r'(?<![\w])(extern\s+)?__shared__\b([^;{}()]*?)(\w+)\s*((?:\[[^\];]*\]\s*)*);')


def rewrite_shared(text):
    mask = code_mask(text)
    out, pos = [], 0
    for m in SHARED_RE.finditer(mask):
        ext, typ, name, dims = m.group(1), m.group(2).strip(), m.group(3), m.group(4).strip()
        depth = mask[:m.start()].count('{') - mask[:m.start()].count('}')
        out.append(text[pos:m.start()])
        if ext:
            if dims.replace(' ', '') != '[]':
                raise TranslateError('extern __shared__ %s: only T name[] is supported' % name)
            typ = re.sub(r'\b(alignas|__align__)\s*\(\s*\d+\s*\)', '', typ).strip()
            out.append('%s *const %s = (%s *)emu_dynamic_shared();' % (typ, name, typ))
        else:
            out.append(text[m.start():m.end()])
            if depth > 0:
                out.append(' emu_shared_fresh(&%s, sizeof %s);' % (name, name))
        pos = m.end()
    out.append(text[pos:])
    return ''.join(out)


GLOBAL_RE = re.compile(r'\b__global__\b[^;{]*?\b(\w+)\s*\(', re.S)


def kernels_of(text):
    names = []
    mask = code_mask(text)
    for m in re.finditer(r'__launch_bounds__\s*\(', mask):
        e = match_forward(mask, m.end() - 1, '(', ')')
        mask = mask[:m.start()] + ' ' * (e - m.start()) + mask[e:]
    for m in GLOBAL_RE.finditer(mask):
        if m.group(1) not in names:
            names.append(m.group(1))
    return names


def extract_function(text, fname):
    mask = code_mask(text)
    m = re.search(r'^[^\n;{}]*\b%s\s*\(' % re.escape(fname), mask, re.M)
    while m:
        b = mask.find('{', m.end())
        semi = mask.find(';', m.end())
        if b >= 0 and (semi < 0 or b < semi):
            e = match_forward(mask, b, '{', '}')
            line = text.count('\n', 0, m.start()) + 1
            return line, text[m.start():e]
        m = re.compile(r'^[^\n;{}]*\b%s\s*\(' % re.escape(fname), re.M).search(mask, m.end())
    raise TranslateError('no definition of %s' % fname)


def write(path, data):
    with open(path, 'w') as f:
        f.write(data)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--src', required=True)
    ap.add_argument('--out', required=True)
    ap.add_argument('--extract', action='append', default=[])
    ap.add_argument('names', nargs='*')
    a = ap.parse_args()
    outdir = os.path.join(a.out, 'backend', 'cuda')
    os.makedirs(outdir, exist_ok=True)
    for name in a.names:
        path = os.path.abspath(os.path.join(a.src, name))
        try:
            with open(path) as f:
                text = f.read()
            body, _ = rewrite_launches(text)
            body = rewrite_shared(body)
            data = '#line 1 "%s"\n%s' % (path, body)
            tag = re.sub(r'\W', '_', name)
            regs = ''.join('static emu_kernel_registrar emu_reg_%s_%d_("%s", "%s");\n' % (tag, i, name, k)
                           for i, k in enumerate(kernels_of(text)))
            if regs:
                if not name.endswith('.cu'):  # before the include guard's #endif
                    m = list(re.finditer(r'^\s*#\s*endif', body, re.M))
                    if not m:
                        raise TranslateError('no #endif to put the kernel registry before')
                    k = m[-1].start()
                    data = '#line 1 "%s"\n%s%s#line %d "%s"\n%s' % (
                        path, body[:k], regs, body.count('\n', 0, k) + 1, path, body[k:])
                else:
                    data += '\n#line 1 "%s (emulator registry)"\n%s' % (name, regs)
            outname = name + '.cpp' if name.endswith('.cu') else name
            write(os.path.join(outdir, outname), data)
        except (OSError, TranslateError) as e:
            sys.exit('cu2cpp: %s: %s' % (path, e))
    for spec in a.extract:
        fname, func = spec.split(':')
        path = os.path.abspath(os.path.join(a.src, fname))
        try:
            with open(path) as f:
                text = f.read()
            line, body = extract_function(text, func)
        except (OSError, TranslateError) as e:
            sys.exit('cu2cpp: %s: %s' % (path, e))
        data = ('#include "backend/cuda/common.cuh"\n#line %d "%s"\n%s\n' % (line, path, body))
        write(os.path.join(outdir, '%s.%s.cpp' % (fname, func)), data)


if __name__ == '__main__':
    main()
