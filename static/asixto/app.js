// Small behaviours shared by every dashboard page; the pages work without them.
(function () {
  // <form data-confirm="Question?">: ask before submitting (revoking a key, removing a server…).
  document.addEventListener("submit", function (event) {
    var form = event.target.closest("form[data-confirm]");
    if (form && !window.confirm(form.dataset.confirm)) event.preventDefault();
  }, true);

  // <form data-busy="Calling…">: once submitted, its button shows that the request is running and
  // cannot be pressed twice (a slow console call). Disabled after the submit, so its value is sent.
  document.addEventListener("submit", function (event) {
    var form = event.target.closest("form[data-busy]");
    var button = event.submitter || (form && form.querySelector("button[type=submit]"));
    if (!form || event.defaultPrevented || (button && button.hasAttribute("data-no-busy"))) return;
    setTimeout(function () {
      form.setAttribute("aria-busy", "true");
      if (!button) return;
      button.disabled = true;
      button.textContent = form.dataset.busy;
    }, 0);
  });

  // The server form: show only the fields of the chosen transport (inputs marked data-transports).
  function showTransportFields(select) {
    document.querySelectorAll("[data-transports]").forEach(function (input) {
      var wrapper = input.closest(".field") || input;
      wrapper.hidden = input.dataset.transports.split(" ").indexOf(select.value) === -1;
    });
  }
  document.addEventListener("DOMContentLoaded", function () {
    var transport = document.querySelector("select[name=transport]");
    if (!transport) return;
    transport.addEventListener("change", function () { showTransportFields(transport); });
    showTransportFields(transport);
  });
})();
