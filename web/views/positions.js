// The positional encodings, positions (rows) by dimensions (columns): the sinusoids of the paper
// for encoder-decoder models, GPT's learned W_pos otherwise. Drawn once per model. A rotary model
// (Llama, GPT-NeoX) has no such table: the panel says so and where its positions act instead.
import { LUT, gate } from './common.js';
import { t } from '../i18n.js';

export function createPositions({ canvas, title, legend, readout }) {
  const g = gate('positions');
  let pe = null, sinusoid = false, rotary = null;
  function describe() {
    if (rotary) {
      title.textContent = t('peRotary');
      legend.textContent = t('peRotaryLegend', rotary);
      return;
    }
    if (!pe) return;
    const [n, d] = pe.shape;
    title.textContent = sinusoid ? t('peSinusoid') : t('peLearned');
    legend.textContent = (sinusoid ? t('peSinusoidLegend', d) : t('peLearnedLegend')) + t('peAxes', n, d, pe.lo, pe.hi);
    canvas.setAttribute('aria-label', t('peLabel', n, d));
  }
  canvas.addEventListener('pointermove', (e) => {
    if (!pe) return;
    const [n, d] = pe.shape;
    const pos = Math.floor(e.offsetY / canvas.clientHeight * n), dim = Math.floor(e.offsetX / canvas.clientWidth * d);
    if (pos < 0 || dim < 0 || pos >= n || dim >= d) return;
    readout.textContent = t('peCell', pos, dim, pe.data[pos * d + dim]);
  });
  return {
    /** data: the table { shape, data }, or null for a rotary model (info: its description). */
    update(data, isSinusoid, key, info = null) {
      g.run(key, () => {
        rotary = data ? null : info;
        canvas.hidden = !data;
        canvas.style.display = data ? '' : 'none'; // the stylesheet sizes canvases: hidden alone would not hide it
        readout.textContent = '';
        pe = data;
        if (!data) { describe(); return; }
        sinusoid = isSinusoid;
        const [n, d] = pe.shape;
        canvas.width = d;
        canvas.height = n;
        // as wide as fits (up to 6 px a dimension), rows at least a pixel and at most 400 px in all
        const scale = Math.max(1, Math.min(6, Math.floor(660 / d)));
        const rowScale = Math.max(1, Math.min(scale, Math.floor(400 / n) || 1));
        canvas.style.width = '100%';
        canvas.style.maxWidth = `${d * scale}px`;
        canvas.style.height = 'auto';
        canvas.style.aspectRatio = `${d * scale} / ${n * rowScale}`;
        let lo = Infinity, hi = -Infinity;
        for (const v of pe.data) { lo = Math.min(lo, v); hi = Math.max(hi, v); }
        pe.lo = lo; pe.hi = hi;
        const img = canvas.getContext('2d').createImageData(d, n);
        for (let k = 0; k < n * d; k++) {
          const c = LUT[Math.round(255 * (pe.data[k] - lo) / (hi - lo || 1))];
          img.data[4 * k] = c[0]; img.data[4 * k + 1] = c[1]; img.data[4 * k + 2] = c[2]; img.data[4 * k + 3] = 255;
        }
        canvas.getContext('2d').putImageData(img, 0, 0);
        canvas.dataset.rows = n;
        canvas.dataset.cols = d;
        describe();
      });
    },
    relabel: describe,
  };
}
