// Live updates: when the server says an object changed, the page's main
// content is fetched again and replaced, keeping the scroll position and
// the focus's element when it is still there.
(function () {
  if (!window.EventSource) return;
  var busy = false, again = false;
  function refresh() {
    if (busy) { again = true; return; }
    busy = true;
    fetch(window.location.href, { headers: { "Accept": "text/html" } })
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) {
        if (!html) return;
        var next = new DOMParser().parseFromString(html, "text/html").querySelector("main");
        var main = document.querySelector("main");
        if (!next || !main) return;
        var focused = document.activeElement && document.activeElement.id;
        main.replaceWith(next);
        if (focused) { var el = document.getElementById(focused); if (el) el.focus(); }
        document.body.dataset.updated = String(Date.now());
      })
      .finally(function () { busy = false; if (again) { again = false; refresh(); } });
  }
  var source = new EventSource("/events");
  source.addEventListener("changed", refresh);
})();
