//! lockbench-report's integration tests, one test binary: `hgrm` (the `.hgrm` files checked by
//! an independent Python implementation) and `report_html` (the HTML report, opened in
//! headless Chromium).

mod hgrm;
mod report_html;
