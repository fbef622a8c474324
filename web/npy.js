// Tensors as NumPy files, for the Export menu: one .npy (format 1.0) per tensor, and an .npz (a
// zip of .npy files, stored uncompressed, as numpy.savez writes) holding them under their names,
// so that `np.load('lantern.npz')['blocks.0.attn.hook_pattern']` gives the tensor the page shows.
// Plain bytes in, bytes out: the same module runs in the page and under Node.

const encoder = new TextEncoder();

/**
 * One tensor as a .npy file: magic \x93NUMPY, version 1.0, the header length (little-endian
 * uint16), then a Python dict literal padded with spaces to a multiple of 64 bytes and ending in
 * '\n', then the float32 values little-endian in C order.
 */
export function npy(shape, data) {
  if (!(data instanceof Float32Array)) throw new TypeError('npy: data must be a Float32Array');
  const count = shape.reduce((a, b) => a * b, 1);
  if (count !== data.length) throw new RangeError(`npy: shape [${shape}] holds ${count} values, data has ${data.length}`);
  const dims = shape.length === 1 ? `${shape[0]},` : shape.join(', ');
  let header = `{'descr': '<f4', 'fortran_order': False, 'shape': (${dims}), }`;
  const used = 10 + header.length + 1; // magic (6) + version (2) + length (2), the header, '\n'
  header += ' '.repeat((64 - (used % 64)) % 64) + '\n';
  const head = encoder.encode(header);
  if (head.length > 0xffff) throw new RangeError('npy: the header does not fit version 1.0');
  const out = new Uint8Array(10 + head.length + data.length * 4);
  out.set([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 1, 0, head.length & 0xff, head.length >> 8]);
  out.set(head, 10);
  const view = new DataView(out.buffer, 10 + head.length);
  for (let i = 0; i < data.length; i++) view.setFloat32(i * 4, data[i], true);
  return out;
}

let crcTable = null;
function crc32(bytes) {
  if (!crcTable) {
    crcTable = new Uint32Array(256);
    for (let n = 0; n < 256; n++) {
      let c = n;
      for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
      crcTable[n] = c >>> 0;
    }
  }
  let c = 0xffffffff;
  for (let i = 0; i < bytes.length; i++) c = crcTable[(c ^ bytes[i]) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

/**
 * A zip of files, each stored (method 0, no compression): [{ name, bytes }] -> Uint8Array.
 * Local headers, the data, a central directory and its end record; no ZIP64, so the whole
 * archive must stay under 4 GB and 65,535 files.
 */
export function zip(files) {
  if (files.length > 0xffff) throw new RangeError('zip: too many files');
  const parts = [];
  const central = [];
  let offset = 0;
  const DOS_DATE = (1 << 5) | 1; // 1980-01-01, 00:00: a fixed date, so the same tensors give the same bytes
  for (const { name, bytes } of files) {
    const nameBytes = encoder.encode(name);
    const crc = crc32(bytes);
    const local = new DataView(new ArrayBuffer(30));
    local.setUint32(0, 0x04034b50, true);
    local.setUint16(4, 20, true);       // version needed: 2.0
    local.setUint16(6, 0x0800, true);   // flags: the name is UTF-8
    local.setUint16(8, 0, true);        // stored
    local.setUint16(10, 0, true);       // time
    local.setUint16(12, DOS_DATE, true);
    local.setUint32(14, crc, true);
    local.setUint32(18, bytes.length, true);
    local.setUint32(22, bytes.length, true);
    local.setUint16(26, nameBytes.length, true);
    local.setUint16(28, 0, true);
    const entry = new DataView(new ArrayBuffer(46));
    entry.setUint32(0, 0x02014b50, true);
    entry.setUint16(4, 20, true);
    entry.setUint16(6, 20, true);
    entry.setUint16(8, 0x0800, true);
    entry.setUint16(10, 0, true);
    entry.setUint16(12, 0, true);
    entry.setUint16(14, DOS_DATE, true);
    entry.setUint32(16, crc, true);
    entry.setUint32(20, bytes.length, true);
    entry.setUint32(24, bytes.length, true);
    entry.setUint16(28, nameBytes.length, true);
    entry.setUint32(42, offset, true);
    parts.push(new Uint8Array(local.buffer), nameBytes, bytes);
    central.push(new Uint8Array(entry.buffer), nameBytes);
    offset += 30 + nameBytes.length + bytes.length;
    if (offset > 0xffffffff) throw new RangeError('zip: the archive would pass 4 GB');
  }
  const centralSize = central.reduce((a, b) => a + b.length, 0);
  const end = new DataView(new ArrayBuffer(22));
  end.setUint32(0, 0x06054b50, true);
  end.setUint16(8, files.length, true);
  end.setUint16(10, files.length, true);
  end.setUint32(12, centralSize, true);
  end.setUint32(16, offset, true);
  const all = [...parts, ...central, new Uint8Array(end.buffer)];
  const out = new Uint8Array(all.reduce((a, b) => a + b.length, 0));
  let at = 0;
  for (const p of all) { out.set(p, at); at += p.length; }
  return out;
}

/** Tensors [{ name, shape, data }] as one .npz: each under `<name>.npy`. */
export const npz = (tensors) => zip(tensors.map((t) => ({ name: `${t.name}.npy`, bytes: npy(t.shape, t.data) })));
