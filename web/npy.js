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
  if (LITTLE_ENDIAN) out.set(new Uint8Array(data.buffer, data.byteOffset, data.byteLength), 10 + head.length);
  else {
    const view = new DataView(out.buffer, 10 + head.length);
    for (let i = 0; i < data.length; i++) view.setFloat32(i * 4, data[i], true);
  }
  return out;
}
const LITTLE_ENDIAN = new Uint8Array(new Float32Array([1]).buffer)[3] === 0x3f; // (every platform wasm runs on)

// CRC-32 (zip's), eight bytes a step ("slicing by 8": table k holds the CRC of a byte followed by
// k zero bytes); a byte a step took about a second for the 300 MB of a layer at 1024 tokens
let crcTables = null;
function crc32(bytes) {
  if (!crcTables) {
    crcTables = Array.from({ length: 8 }, () => new Int32Array(256));
    for (let n = 0; n < 256; n++) {
      let c = n;
      for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
      crcTables[0][n] = c;
    }
    for (let n = 0; n < 256; n++) for (let k = 1; k < 8; k++) crcTables[k][n] = crcTables[0][crcTables[k - 1][n] & 0xff] ^ (crcTables[k - 1][n] >>> 8);
  }
  const [t0, t1, t2, t3, t4, t5, t6, t7] = crcTables;
  let c = ~0, i = 0;
  const n8 = bytes.length - (bytes.length % 8);
  for (; i < n8; i += 8) {
    const a = c ^ (bytes[i] | (bytes[i + 1] << 8) | (bytes[i + 2] << 16) | (bytes[i + 3] << 24));
    c = t7[a & 0xff] ^ t6[(a >>> 8) & 0xff] ^ t5[(a >>> 16) & 0xff] ^ t4[a >>> 24] ^
      t3[bytes[i + 4]] ^ t2[bytes[i + 5]] ^ t1[bytes[i + 6]] ^ t0[bytes[i + 7]];
  }
  for (; i < bytes.length; i++) c = t0[(c ^ bytes[i]) & 0xff] ^ (c >>> 8);
  return ~c >>> 0;
}

/**
 * A zip of files, each stored (method 0, no compression): [{ name, bytes }] -> its parts in
 * order (Uint8Arrays: local headers, the data, a central directory and its end record), for a
 * Blob to join without a copy of its own. No ZIP64, so the whole archive must stay under 4 GB
 * and 65,535 files.
 */
export function zipParts(files) {
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
  return [...parts, ...central, new Uint8Array(end.buffer)];
}

/** The same zip as one Uint8Array. */
export function zip(files) {
  const all = zipParts(files);
  const out = new Uint8Array(all.reduce((a, b) => a + b.length, 0));
  let at = 0;
  for (const p of all) { out.set(p, at); at += p.length; }
  return out;
}

/** Tensors [{ name, shape, data }] as the parts of one .npz (see zipParts): each under `<name>.npy`. */
export const npzParts = (tensors) => zipParts(tensors.map((t) => ({ name: `${t.name}.npy`, bytes: npy(t.shape, t.data) })));
