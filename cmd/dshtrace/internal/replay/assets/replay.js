// Replay page behaviour: a link to #turn-N, #call-ID, #seq-N or #m-N opens
// the collapsed sections around its target and highlights it; a source
// range highlights all its rows; long content unfolds; turns filter by
// end reason. A long session's turns are folded (their body compressed)
// and unfolded here when opened or linked to. Everything works
// on a page opened from a file.
(function () {
  'use strict';
  var marked = [];
  function clearMarks() {
    marked.forEach(function (el) { el.classList.remove('hl'); });
    marked = [];
  }
  function reveal(el) {
    for (var p = el; p; p = p.parentElement) {
      if (p.tagName === 'DETAILS') p.open = true;
    }
  }
  function mark(el) {
    if (el.classList.contains('member')) el = el.parentElement;
    if (marked.indexOf(el) >= 0) return;
    reveal(el);
    el.classList.add('hl');
    marked.push(el);
  }

  // Folded blocks: data-folded, the body compressed in the text of a
  // hidden .z element.
  function unfold(el) {
    if (!el.hasAttribute('data-folded')) return Promise.resolve();
    el.removeAttribute('data-folded');
    var body = el.querySelector('.turn-body');
    var bin = atob(body.querySelector('.z').textContent.replace(/-/g, '+').replace(/_/g, '/'));
    var bytes = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
    var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream('deflate-raw'));
    return new Response(stream).text().then(function (html) { body.innerHTML = html; });
  }
  function inRanges(list, n) {
    return (list || '').split(' ').some(function (r) {
      var d = r.indexOf('-');
      return d > 0 && n >= +r.slice(0, d) && n <= +r.slice(d + 1);
    });
  }
  // folded finds the folded blocks that hold element id (or, for a seq
  // range, any of its seqs).
  function folded(id, hi) {
    var m = /^((?:s\d+\.)?)(seq|m|line)-(\d+)$/.exec(id);
    var prefix = m ? m[1] : (/^(s\d+\.)/.exec(id) || ['', ''])[1];
    var section = document.getElementById(prefix + 'session');
    if (!section) return [];
    var out = [];
    section.querySelectorAll('[data-folded]').forEach(function (el) {
      if (m) {
        for (var n = +m[3]; n <= (hi === undefined ? +m[3] : hi); n++) {
          if (inRanges(el.getAttribute('data-' + m[2]), n)) { out.push(el); return; }
        }
      } else if ((el.getAttribute('data-ids') || '').split(' ').some(function (w) {
        try { return decodeURIComponent(w) === id; } catch (e) { return false; }
      })) {
        out.push(el);
      }
    });
    return out;
  }
  function unfoldFor(id, hi) {
    return Promise.all(folded(id, hi).map(unfold));
  }

  function target() {
    var raw = location.hash.slice(1);
    if (!raw) return null;
    var id = raw;
    try { id = decodeURIComponent(raw); } catch (e) { /* an id with a literal % */ }
    return id;
  }
  function show(id) {
    var el = document.getElementById(id);
    if (!el) return false;
    clearMarks();
    mark(el);
    el.scrollIntoView({ block: 'start' });
    return true;
  }
  function follow() {
    var id = target();
    if (!id || show(id)) return;
    unfoldFor(id).then(function () {
      if (show(id)) return;
      // A server's page of a long session: the server finds the page that
      // holds the target.
      var find = document.body.getAttribute('data-find');
      if (find && !/[?&]find=/.test(location.search)) location.replace(find + encodeURIComponent(id) + location.hash);
    });
  }
  window.addEventListener('hashchange', follow);
  document.addEventListener('toggle', function (ev) {
    if (ev.target.open && ev.target.hasAttribute('data-folded')) unfold(ev.target);
  }, true);
  document.addEventListener('click', function (ev) {
    var a = ev.target.closest('a[data-lo]');
    if (a) {
      ev.preventDefault();
      var p = a.getAttribute('data-p'), lo = +a.getAttribute('data-lo'), hi = +a.getAttribute('data-hi');
      unfoldFor(p + 'seq-' + lo, hi).then(function () {
        clearMarks();
        var first = null;
        for (var k = lo; k <= hi; k++) {
          var el = document.getElementById(p + 'seq-' + k);
          if (!el) continue;
          mark(el);
          first = first || el;
        }
        if (first) {
          history.replaceState(null, '', '#' + p + 'seq-' + lo);
          first.scrollIntoView({ block: 'start' });
        }
      });
      return;
    }
    var b = ev.target.closest('button[data-act]');
    if (!b) return;
    var act = b.getAttribute('data-act');
    if (act === 'more') {
      var clip = b.previousElementSibling;
      clip.classList.toggle('open');
      b.textContent = clip.classList.contains('open') ? 'show less' : 'show all';
    } else if (act === 'open' || act === 'close') {
      document.querySelectorAll('details.turn').forEach(function (d) { d.open = act === 'open'; });
    }
  });
  document.addEventListener('change', function (ev) {
    var s = ev.target;
    if (s.getAttribute('data-act') !== 'filter') return;
    document.querySelectorAll('details.turn').forEach(function (d) {
      d.classList.toggle('hide', s.value !== '' && d.getAttribute('data-reason') !== s.value);
    });
  });
  follow();
})();
