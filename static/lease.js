// Lease countdowns: <time datetime="…" title="absolute" data-lease-left="252.3">4 min 12 s
// left</time>, written by the server (switchboard/templatetags/board_tags.py, `lease`) and ticked
// down here every second, in the same words. It counts from the seconds left when the server
// rendered it, on the browser's monotonic clock, so a browser whose clock is wrong still shows
// the server's countdown. Elements that arrive later (htmx swaps, live pushes) start from their
// own render.
(() => {
  const started = new WeakMap();
  const duration = (whole) => {
    const days = Math.floor(whole / 86400);
    const hours = Math.floor((whole % 86400) / 3600);
    const minutes = Math.floor((whole % 3600) / 60);
    const secs = whole % 60;
    if (days) return hours ? `${days} d ${hours} h` : `${days} d`;
    if (hours) return minutes ? `${hours} h ${minutes} min` : `${hours} h`;
    if (minutes) return secs ? `${minutes} min ${secs} s` : `${minutes} min`;
    return `${secs} s`;
  };
  const left = (seconds) => {
    const whole = Math.floor(seconds);
    return whole <= 0 ? "expired" : `${duration(whole)} left`;
  };
  const tick = () => {
    const now = performance.now();
    for (const time of document.querySelectorAll("time[data-lease-left]")) {
      const rendered = Number.parseFloat(time.dataset.leaseLeft);
      if (Number.isNaN(rendered)) continue;
      if (!started.has(time)) started.set(time, now);
      const text = left(rendered - (now - started.get(time)) / 1000);
      if (time.textContent !== text) time.textContent = text;
    }
  };
  document.addEventListener("DOMContentLoaded", tick);
  document.addEventListener("htmx:afterSettle", tick);
  setInterval(tick, 1000);
})();
