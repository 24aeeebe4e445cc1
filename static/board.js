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
