
(function () {
  const root = document.getElementById(%(uid)s);
  const data = JSON.parse(root.querySelector('script[type="application/json"]').textContent);
  const T = data.text;
  const svg = root.querySelector('svg'), NS = 'http://www.w3.org/2000/svg';
  const W = 672, Hh = 300, m = {l: 56, r: 12, t: 12, b: 40};
  const ctl = name => root.querySelector('input[name="' + name + '"]');
  const out = name => root.querySelector('output[name="' + name + '"]');
  function el(tag, attrs, text) {
    const e = document.createElementNS(NS, tag);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    svg.appendChild(e); return e;
  }
  const SUP = {'-': '\u207b', 0: '\u2070', 1: '\u00b9', 2: '\u00b2', 3: '\u00b3', 4: '\u2074', 5: '\u2075',
               6: '\u2076', 7: '\u2077', 8: '\u2078', 9: '\u2079'};
  const pow10 = v => '10' + String(Math.round(v)).split('').map(c => SUP[c]).join('');
  function draw() {
    const L = +ctl('depth').value, i = +ctl('scale').value, j = +ctl('strength').value;
    const alpha = data.strengths[j], scale = data.scales[i];
    out('depth').value = String(L);
    out('scale').value = String(scale);
    out('strength').value = String(alpha);
    // what a screen reader says for each slider: its value, not its position on the grid
    ctl('depth').setAttribute('aria-valuetext', L + ' layer' + (L === 1 ? '' : 's'));
    ctl('scale').setAttribute('aria-valuetext', 'weight scale ' + scale);
    ctl('strength').setAttribute('aria-valuetext', 'skip strength ' + alpha);
    const meas = data.measured[i][j].slice(0, L + 1);
    const bnd = alpha === 0 ? data.bound[i].slice(0, L + 1) : null;
    let lo = Math.min(...meas), hi = Math.max(0, ...meas);
    if (bnd) { hi = Math.max(hi, Math.min(...bnd.slice(1).concat([hi]))); lo = Math.min(lo, Math.max(Math.min(...bnd), lo - 20)); }
    hi = Math.min(hi, 40);
    lo = Math.floor(Math.max(lo, -320)) - 1; hi = Math.ceil(hi) + 1;
    const x = l => m.l + (W - m.l - m.r) * l / Math.max(L, 1);
    const y = v => m.t + (Hh - m.t - m.b) * (hi - Math.max(lo, Math.min(hi, v))) / (hi - lo);
    while (svg.firstChild) svg.removeChild(svg.firstChild);
    const step = [1, 2, 5, 10, 20, 50, 100].find(s => (hi - lo) / s <= 6) || 100;
    for (let v = Math.ceil(lo / step) * step; v <= hi; v += step) {
      el('line', {x1: m.l, x2: W - m.r, y1: y(v), y2: y(v), stroke: 'currentColor', 'stroke-opacity': .15});
      el('text', {x: m.l - 6, y: y(v) + 4, 'text-anchor': 'end'}, pow10(v));
    }
    const tstep = L <= 12 ? 1 : Math.ceil(L / 12);
    for (let l = 0; l <= L; l += tstep) el('text', {x: x(l), y: Hh - m.b + 16, 'text-anchor': 'middle'}, String(l));
    el('text', {x: (m.l + W - m.r) / 2, y: Hh - 4, 'text-anchor': 'middle'}, T.axis);
    el('line', {x1: m.l, x2: m.l, y1: m.t, y2: Hh - m.b, stroke: 'currentColor', 'stroke-opacity': .5});
    el('line', {x1: m.l, x2: W - m.r, y1: Hh - m.b, y2: Hh - m.b, stroke: 'currentColor', 'stroke-opacity': .5});
    const path = vals => vals.map((v, l) => (l ? 'L' : 'M') + x(l).toFixed(1) + ' ' + y(v).toFixed(1)).join(' ');
    // the bound where it is drawn; past the top of the plot it is vacuous: stop at the edge
    const clipped = vals => {
      let d = '';
      for (let l = 0; l < vals.length; l++) {
        if (vals[l] > hi) {
          if (l > 0) d += ' L' + (x(l - 1) + (x(l) - x(l - 1)) * (hi - vals[l - 1]) / (vals[l] - vals[l - 1])).toFixed(1) +
                         ' ' + y(hi).toFixed(1);
          break;
        }
        d += (l ? ' L' : 'M') + x(l).toFixed(1) + ' ' + y(vals[l]).toFixed(1);
      }
      return d || 'M0 0';
    };
    if (bnd) el('path', {d: clipped(bnd), fill: 'none', stroke: '#D55E00', 'stroke-width': 2, 'stroke-dasharray': '6 4',
                         'class': 'rc-bound'});
    el('path', {d: path(meas), fill: 'none', stroke: '#0072B2', 'stroke-width': 2.5, 'class': 'rc-measured'});
    meas.forEach((v, l) => el('circle', {cx: x(l), cy: y(v), r: 3, fill: '#0072B2'}));
    const key = [[T.measured, '#0072B2', '']].concat(bnd ? [[T.bound, '#D55E00', '6 4']] : []);
    key.forEach(([name, colour, dash], k) => {
      // bottom left: the curves start at the top left and fall to the right
      const ky = Hh - m.b - 14 - 18 * (key.length - 1 - k), kx = m.l + 14;
      el('line', {x1: kx, x2: kx + 28, y1: ky, y2: ky, stroke: colour, 'stroke-width': 2.5, 'stroke-dasharray': dash});
      el('text', {x: kx + 36, y: ky + 4}, name);
    });
    const last = meas[meas.length - 1];
    const e = Math.floor(last), mant = Math.pow(10, last - e);
    const shown = last <= -320 ? T.underflow
      : Math.abs(last) < 3 ? Math.pow(10, last).toPrecision(2) : mant.toFixed(1) + ' \u00d7 ' + pow10(e);
    const fill = (t, v) => t.replace('{L}', String(L)).replace('{s}', L === 1 ? '' : 's')
      .replace('{shown}', shown).replace('{value}', v || '');
    root.querySelector('.rc-note').textContent = fill(T.after) +
      (!bnd ? fill(T.no_bound) : bnd[bnd.length - 1] >= 0 ? fill(T.vacuous) : fill(T.bound_value, pow10(bnd[bnd.length - 1])));
  }
  root.querySelectorAll('input').forEach(c => c.addEventListener('input', draw));
  draw();
})();
