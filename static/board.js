// Copy buttons: <button data-copy="#element-id" hidden>. They stay hidden without JavaScript or
// without the Clipboard API (it needs a secure context: https, or localhost).
(() => {
  if (!navigator.clipboard) return;
  const reveal = () => {
    for (const button of document.querySelectorAll("button[data-copy]")) button.hidden = false;
  };
  document.addEventListener("DOMContentLoaded", reveal);
  document.addEventListener("htmx:afterSettle", reveal);
  document.addEventListener("click", (event) => {
    const button = event.target.closest("button[data-copy]");
    if (!button) return;
    const source = document.querySelector(button.dataset.copy);
    if (!source) return;
    navigator.clipboard.writeText(source.textContent).then(
      () => { button.textContent = "Copied"; },
      () => { button.textContent = "Copy failed: select the text instead"; },
    );
  });
})();

// The drawer's close button: <button data-close-drawer>. A listener here rather than an hx-on
// attribute, which htmx would run through Function() and the Content-Security-Policy would
// then have to allow ('unsafe-eval').
document.addEventListener("click", (event) => {
  if (!event.target.closest("button[data-close-drawer]")) return;
  const drawer = document.getElementById("drawer");
  if (drawer) drawer.replaceChildren();
});

// Relative times: <time datetime="…" title="absolute" data-relative>3 min ago</time>, written by
// the server (switchboard/templatetags/board_tags.py, `when`) and kept current here while the
// page stays open, in the same words. The absolute time stays in the tooltip.
(() => {
  const relative = (moment, now) => {
    let seconds = (now - moment) / 1000;
    const ahead = seconds < 0;
    seconds = Math.abs(seconds);
    if (seconds < 5) return "just now";
    let amount;
    if (seconds < 60) amount = `${Math.floor(seconds)} s`;
    else if (seconds < 3600) amount = `${Math.floor(seconds / 60)} min`;
    else if (seconds < 48 * 3600) amount = `${Math.floor(seconds / 3600)} h`;
    else amount = `${Math.floor(seconds / 86400)} d`;
    return ahead ? `in ${amount}` : `${amount} ago`;
  };
  const refresh = () => {
    const now = Date.now();
    for (const time of document.querySelectorAll("time[data-relative]")) {
      const moment = Date.parse(time.getAttribute("datetime"));
      if (!Number.isNaN(moment)) time.textContent = relative(moment, now);
    }
  };
  document.addEventListener("DOMContentLoaded", refresh);
  document.addEventListener("htmx:afterSettle", refresh);
  setInterval(refresh, 15000);
})();

// The todo list's live rows (activity/live.py). The list's socket drops the todos the page does
// not show, that now match its filter, into the hidden <tbody id="live-incoming">. On a first
// page in newest-first order (data-live-insert="1") they are placed by creation time at once
// while the operator is at the top of the page; scrolled away, they wait behind the "N new"
// bar, so nothing moves under the reader. Elsewhere (another sort or page) the bar only counts
// them and shows them by reloading. The row whose drawer is open stays marked as selected
// across the socket's redraws, and the filter is the page's URL, which nothing here changes.
(() => {
  const TOP_PX = 48;
  let held = [];
  let selected = null;
  const board = () => document.querySelector(".board[data-live-insert]");
  const atTop = () => window.scrollY <= TOP_PX;
  const mark = () => {
    for (const row of document.querySelectorAll("#todo-rows tr.selected")) {
      if (row.id !== selected) row.classList.remove("selected");
    }
    const row = selected && document.getElementById(selected);
    if (row) row.classList.add("selected");
  };
  const place = (row) => {
    const body = document.getElementById("todo-rows");
    document.getElementById("rows-empty")?.remove();
    document.getElementById(row.id)?.remove();
    const created = Date.parse(row.dataset.created);
    const after = [...body.children].find((other) => Date.parse(other.dataset.created) < created);
    body.insertBefore(row, after || null);
    row.classList.add("new");
  };
  const bar = () => {
    const box = document.getElementById("live-new");
    if (!box) return;
    box.hidden = held.length === 0;
    const insert = board()?.dataset.liveInsert === "1";
    const noun = held.length === 1 ? "new todo" : "new todos";
    box.querySelector("button").textContent = insert
      ? `${held.length} ${noun}: show`
      : `${held.length} ${noun} ${held.length === 1 ? "matches" : "match"} this filter: reload`;
  };
  const flush = () => {
    for (const row of held) place(row);
    held = [];
    bar();
    mark();
  };
  document.addEventListener("htmx:wsAfterMessage", () => {
    const incoming = document.getElementById("live-incoming");
    if (incoming) {
      for (const row of [...incoming.children]) {
        row.remove();
        held = held.filter((other) => other.id !== row.id);
        held.push(row);
      }
    }
    if (held.length && board()?.dataset.liveInsert === "1" && atTop()) flush();
    else bar();
    mark();
  });
  window.addEventListener("scroll", () => {
    if (held.length && board()?.dataset.liveInsert === "1" && atTop()) flush();
  }, { passive: true });
  document.addEventListener("click", (event) => {
    if (event.target.closest("button[data-live-show]")) {
      if (board()?.dataset.liveInsert === "1") {
        flush();
        window.scrollTo({ top: 0 });
      } else {
        window.location.reload();
      }
      return;
    }
    const row = event.target.closest("#todo-rows tr.row");
    if (row && event.target.closest("a[hx-get]")) {
      selected = row.id;
      mark();
    } else if (event.target.closest("button[data-close-drawer]")) {
      selected = null;
      mark();
    }
  });
})();
