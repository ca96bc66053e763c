// Live refresh of the pending list: fetch the rows every few seconds (same origin, with
// the session cookie) and swap them in. The server renders and escapes the HTML.
(function () {
  const box = document.getElementById("pending");
  if (!box) return;
  const every = Math.max(1, Number(box.dataset.refresh || 5)) * 1000;
  async function refresh() {
    try {
      const answer = await fetch(box.dataset.rows, { credentials: "same-origin" });
      if (answer.ok) box.innerHTML = await answer.text();
    } catch (error) {
      // The server restarting: keep the last list and try again.
    }
    setTimeout(refresh, every);
  }
  setTimeout(refresh, every);
})();
