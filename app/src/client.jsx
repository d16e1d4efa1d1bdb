// Client entry: the renderer package's client helper hydrates the server markup, renders
// a Go loader's props, or loads the data the page's own way (the demo computes it
// deterministically) and renders from scratch (docs/app-contract.md, "Client build"); on a
// page of the Go server's own templates, it brings each island to life.
import { start } from '../../renderer/client/index.js';
import { islands, notFoundPage, pages } from './pages.js';
import './styles.css';

start({ pages, notFoundPage, islands });
