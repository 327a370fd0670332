/*
 * The periodic task form (django-celery-beat's admin): shows the chosen crontab in words under
 * the crontab field. django-celery-beat ships this as an inline <script>; it lives here so the
 * Content-Security-Policy can refuse inline code (templates/admin/djcelery/).
 */
"use strict";
(function ($) {
    const readableCrontabs = JSON.parse(document.getElementById("readable-crontabs").textContent);
    const help = $(".field-crontab .help");
    const originalHelp = help.html();

    function updateCrontabHelp(additional) {
        help.html(originalHelp).append($("<br>"), document.createTextNode("Translation: " + additional));
    }

    $(".field-crontab_translation").hide();
    $(".field-crontab").change(function () {
        updateCrontabHelp(readableCrontabs[$("#id_crontab").val()]);
    });
})(django.jQuery);
