// The Jupyter widget's front end (anywidget). Placeholder entry until the widget lands:
// it renders the same DashboardUI as the page.
export { DashboardUI } from "./dashboard.js";
