import { render } from 'preact';
import { App } from './app.js';
import { applyTheme, storedTheme } from './theme.js';
import './styles.css';

applyTheme(storedTheme(), false);
render(<App />, document.getElementById('app') as HTMLElement);
