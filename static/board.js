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
