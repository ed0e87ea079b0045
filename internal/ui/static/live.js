// Live updates: when the server says an object changed, the page's main
// content is fetched again and replaced, keeping the scroll position and
// the focus's element when it is still there, and what was typed into
// its fields.
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
        keepTyped(main, next);
        main.replaceWith(next);
        if (focused) { var el = document.getElementById(focused); if (el) el.focus(); }
        document.body.dataset.updated = String(Date.now());
      })
      .finally(function () { busy = false; if (again) { again = false; refresh(); } });
  }
  // keepTyped carries what the user typed into the fields of the old
  // content over to the new one, so that an update does not wipe it.
  function keepTyped(old, next) {
    old.querySelectorAll("input[id], textarea[id], select[id]").forEach(function (field) {
      var twin = next.querySelector("#" + CSS.escape(field.id));
      if (twin && field.type !== "hidden" && field.value !== field.defaultValue) twin.value = field.value;
    });
  }
  // The stream is told how many changes the page was rendered after, and
  // says at once when more came before it started (or while it was down).
  var since = document.body.dataset.changes;
  var source = null;
  function listen(after) {
    source = new EventSource("/events" + (after ? "?since=" + after : ""));
    source.addEventListener("changed", refresh);
  }
  listen(since);
  // A page the browser keeps for going back (the back/forward cache)
  // closes its stream, or the streams of such pages would use up the
  // browser's few connections to this host; back again, it catches up.
  window.addEventListener("pagehide", function () { if (source) { source.close(); source = null; } });
  window.addEventListener("pageshow", function (e) { if (e.persisted && !source) { listen(null); refresh(); } });
})();
